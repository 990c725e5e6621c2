package images

import (
	"net/http/httptest"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/rendition"
)

func TestStoreQuery(t *testing.T) {
	for _, tc := range []struct {
		name, query string
		format      imageparams.Format
		field       string // the invalid parameter
		object      string // the variant's object name, when valid
	}{
		{"none", "", imageparams.FormatPNG, "", "id.png"},
		{"format only", "", imageparams.FormatWebP, "", "id.webp"},
		{"width", "width=400", imageparams.FormatWebP, "", "id_w-400.webp"},
		{"the edge's parameters", "height=300&width=400&dl=1", imageparams.FormatJPG, "", "id_w-400_h-300.jpg"},
		{"unknown, first by name", "widht=400&zoom=2", imageparams.FormatPNG, "widht", ""},
		{"invalid", "width=0x10", imageparams.FormatPNG, "width", ""},
		{"too large", "width=5001", imageparams.FormatPNG, "width", ""},
		{"a pdf takes none", "width=400", imageparams.FormatPDF, "width", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := storeQuery(httptest.NewRequest("PUT", "/v1/store/x?"+tc.query, nil), tc.format)
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := rendition.ObjectName("id", rendition.Variant{Format: tc.format, Transform: o}); got != tc.object {
					t.Fatalf("object %q, want %q", got, tc.object)
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
