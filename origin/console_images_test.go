package origin_test

import (
	"bytes"
	"context"
	"html"
	"image"
	_ "image/png"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	_ "golang.org/x/image/webp"

	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// TestConsoleImageDetail: GET /v1/images/{id} tells an image's
// parameters, state, size and formats to its organization only; the
// console's detail page shows them escaped, builds transformation URLs
// the edge's parser accepts (and shows its messages for the ones it
// refuses), and deletes the image.
func TestConsoleImageDetail(t *testing.T) {
	o := startOrigin(t)
	const hostile = `<p>card</p><script>alert("x")</script>`
	var made struct{ ID, URL string }
	r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &o.Owner, JSON: map[string]any{"html": hostile, "viewport_width": 300, "viewport_height": 200, "device_scale": 1}})
	apitest.WantStatus(t, r, 200)
	r.Decode(t, &made)
	// The first GET renders it.
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/image/" + made.ID}), 200)

	var info struct {
		ID, URL, State, Format string
		Width, Height, Credits int
		Parameters             map[string]any
		Files                  []struct {
			Format, URL string
			Size        int64
		}
	}
	// The record says ready once the render's write lands, which may
	// follow the first answer.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(time.Minute); ; {
		r = o.do(t, apitest.Request{Method: "GET", Path: "/v1/images/" + made.ID, Creds: &o.Owner})
		apitest.WantStatus(t, r, 200)
		r.Decode(t, &info)
		if info.State != "pending" || time.Now().After(deadline) {
			break
		}
		<-tick.C
	}
	if info.ID != made.ID || info.URL != made.URL || info.State != "ready" || info.Width != 300 || info.Height != 200 || info.Format != "png" || info.Credits != 1 {
		t.Errorf("the image's details: %+v", info)
	}
	if info.Parameters["html"] != hostile || info.Parameters["viewport_width"] != float64(300) {
		t.Errorf("parameters: %v", info.Parameters)
	}
	var formats []string
	for _, f := range info.Files {
		formats = append(formats, f.Format)
		if !strings.HasSuffix(f.URL, "/v1/image/"+made.ID+"."+f.Format) {
			t.Errorf("%s at %s", f.Format, f.URL)
		}
	}
	if strings.Join(formats, " ") != "png jpg webp pdf" || info.Files[0].Size == 0 {
		t.Errorf("files: %+v", info.Files)
	}

	// Another organization's image answers as an unknown one; a key
	// without images:read is refused.
	_, stranger := o.newOrg(context.Background(), t, "free")
	unknown := o.do(t, apitest.Request{Method: "GET", Path: "/v1/images/0190b2c4-7a1e-7d2f-9c3b-2f4e5a6b7c8d", Creds: &o.Owner})
	apitest.WantStatus(t, unknown, 404)
	other := o.do(t, apitest.Request{Method: "GET", Path: "/v1/images/" + made.ID, Creds: &stranger})
	apitest.WantStatus(t, other, 404)
	if !bytes.Equal(other.Body, unknown.Body) {
		t.Errorf("another organization's image: %s; an unknown one: %s", other.Body, unknown.Body)
	}
	creator := o.createKey(t, o.Owner, map[string]any{"name": "creator", "permissions": []string{"images:create"}})
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/images/" + made.ID, Creds: creator.creds()}), 403)

	c := &consoleClient{t: t, base: o.URL}
	c.signIn(o.Owner)
	list := c.send("GET", "/console/images", nil)
	if !strings.Contains(list.body, `href="/console/images/`+made.ID+`"`) {
		t.Fatalf("the list does not link the detail:\n%s", list.body)
	}
	detail := c.send("GET", "/console/images/"+made.ID, nil)
	if detail.status != 200 || strings.Contains(detail.body, "<script>alert") || !strings.Contains(detail.body, html.EscapeString(`<script>alert(\"x\")</script>`)) ||
		!strings.Contains(detail.body, "300 × 200 px") || !strings.Contains(detail.body, made.URL+".png?dl=1") {
		t.Fatalf("detail: %d\n%s", detail.status, detail.body)
	}
	if !strings.Contains(detail.body, `<a href="/console/images" aria-current="page">`) {
		t.Error("the navigation does not mark Images on an image's page")
	}
	if strings.Contains(detail.body, `id="built-url"`) {
		t.Error("the builder made a URL before it was asked")
	}

	built := c.send("GET", "/console/images/"+made.ID+"?"+url.Values{"format": {"webp"}, "width": {"100"}, "height": {""}}.Encode(), nil)
	m := regexp.MustCompile(`<code id="built-url">([^<]+)</code>`).FindStringSubmatch(built.body)
	if m == nil {
		t.Fatalf("no URL built:\n%s", built.body)
	}
	u := html.UnescapeString(m[1])
	if want := made.URL + ".webp?width=100"; u != want {
		t.Errorf("built %q, want %q", u, want)
	}
	// The URL works (the edge applies the width; the origin alone
	// serves the format).
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	img, format, err := image.Decode(bytes.NewReader(body))
	if err != nil || format != "webp" {
		t.Errorf("the built URL gives %q (%v)", format, err)
	} else if img.Bounds().Dx() != 300 {
		t.Errorf("the built URL's image is %v", img.Bounds())
	}

	refused := c.send("GET", "/console/images/"+made.ID+"?"+url.Values{"format": {"png"}, "width": {"99999"}, "aspect_ratio": {"16_9"}}.Encode(), nil)
	if strings.Contains(refused.body, `id="built-url"`) || !regexp.MustCompile(`id="b-width-error" class="field-error">[^<]*5000`).MatchString(refused.body) ||
		strings.Contains(refused.body, `id="b-aspect_ratio-error"`) {
		t.Errorf("a width past the bound:\n%s", refused.body)
	}

	if a := c.send("POST", "/console/images/delete", url.Values{"csrf": {csrfOf(t, detail.body)}, "id": {made.ID}}); a.status != http.StatusSeeOther {
		t.Fatalf("delete: %d\n%s", a.status, a.body)
	}
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/image/" + made.ID}), 404)
	if gone := c.send("GET", "/console/images/"+made.ID, nil); gone.status != 404 {
		t.Errorf("the detail of a deleted image: %d", gone.status)
	}
}
