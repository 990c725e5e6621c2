package images

import (
	"net/http/httptest"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/imageparams"
)

func TestStoreQuery(t *testing.T) {
	for _, tc := range []struct {
		name, query, field string
	}{
		{"none", "", ""},
		{"width", "width=400", "width"},
		{"several, first by name", "width=400&aspect_ratio=1_1", "aspect_ratio"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := storeQuery(httptest.NewRequest("PUT", "/v1/store/x?"+tc.query, nil))
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			ae := apierr.From(err)
			if ae.Status != 400 || len(ae.Fields) != 1 || ae.Fields[0].Path != tc.field {
				t.Fatalf("got %+v", ae)
			}
		})
	}
}

func TestBaseFormat(t *testing.T) {
	img := &Image{ID: "id"}
	if f := BaseFormat(img); f != imageparams.FormatPNG || ObjectName(img.ID, f) != "id.png" {
		t.Fatalf("base %s", f)
	}
	img.Params.PDF = &imageparams.PDFOptions{}
	if f := BaseFormat(img); f != imageparams.FormatPDF || ObjectName(img.ID, f) != "id.pdf" {
		t.Fatalf("base with pdf_options %s", f)
	}
}
