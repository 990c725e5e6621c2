package images

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/perm"
	"github.com/pictorhq/pictor/origin/rendition"
)

// signedQuery is the query of the signed URLs of these tests.
const signedQuery = "html=%3Cp%3Ehi%3C%2Fp%3E&viewport_width=100&viewport_height=50"

// TestSignedURLRefusesBadInput: a signed URL that is not signed by an
// enabled key allowed to create images, or that asks for something
// invalid, is refused with the standard body and creates nothing.
func TestSignedURLRefusesBadInput(t *testing.T) {
	e := newEnv(t)
	o := e.newOrg("pro")
	creator := &Signer{Org: o, APIID: "key-create", Secret: "secret-1", Grant: perm.Grant{Permissions: []perm.Permission{perm.ImagesCreate}}}
	reader := &Signer{Org: o, APIID: "key-read", Secret: "secret-2", Grant: perm.Grant{Permissions: []perm.Permission{perm.ImagesRead}}}
	base := e.serveHTTP(e.handler(creator, reader))
	signed := func(k *Signer, query string) string {
		return "/v1/image/create-and-render/" + k.APIID + "/" + Sign(k.Secret, query)
	}
	tests := []struct {
		name    string
		path    string
		query   string
		status  int
		field   string
		message string
	}{
		{name: "unknown format", path: signed(creator, signedQuery) + "/gif", query: signedQuery, status: 404, message: "Unknown format"},
		{name: "unknown key", path: "/v1/image/create-and-render/key-x/" + Sign("secret-1", signedQuery), query: signedQuery,
			status: 401, message: "Invalid token"},
		{name: "another key's token", path: "/v1/image/create-and-render/key-create/" + Sign("secret-2", signedQuery), query: signedQuery,
			status: 401, message: "Invalid token"},
		{name: "query changed after signing", path: signed(creator, signedQuery), query: signedQuery + "&css=p{}", status: 401},
		{name: "query reordered after signing", path: signed(creator, signedQuery),
			query: "viewport_width=100&html=%3Cp%3Ehi%3C%2Fp%3E&viewport_height=50", status: 401},
		{name: "key without images:create", path: signed(reader, signedQuery), query: signedQuery, status: 403, message: "images:create"},
		{name: "invalid parameter", path: signed(creator, "html=x&viewport_width=abc"), query: "html=x&viewport_width=abc",
			status: 400, field: "viewport_width"},
		{name: "no source", path: signed(creator, "css=p"), query: "css=p", status: 400, field: "html"},
		{name: "template URL without templates", path: "/v1/image/0195f0a0-0000-7000-8000-000000000000/" + Sign("secret-1", "a=1"),
			query: "a=1", status: 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: tt.path + "?" + tt.query})
			m := apitest.WantError(t, r, tt.status)
			apitest.WantMessage(t, m, tt.message)
			if tt.field != "" {
				apitest.WantField(t, r, tt.field)
			}
			if tt.status == http.StatusUnauthorized && r.Header.Get("WWW-Authenticate") == "" {
				t.Fatal("a 401 without WWW-Authenticate")
			}
			if n := len(e.keys(t.Context(), "img/")); n != 0 || e.used(t.Context(), o) != 0 {
				t.Fatalf("a refused signed URL left %d images and %d credits used", n, e.used(t.Context(), o))
			}
		})
	}
}

// TestSignedURLIsChargedOnce: a signed URL creates its image and charges
// it on first use (tagged for the edges with its key), and is served from
// storage afterwards at no cost, in any format, whatever the token's case
// and dedupe_duration_s; the image id is its content id.
func TestSignedURLIsChargedOnce(t *testing.T) {
	e := newEnv(t)
	o := e.newOrg("pro")
	k := &Signer{Org: o, APIID: "key-create", Secret: "secret-1", Grant: perm.Grant{AllFuture: true}}
	base := e.serveHTTP(e.handler(k))
	get := func(query, format string, upper bool) *apitest.Response {
		t.Helper()
		token := Sign(k.Secret, query)
		if upper {
			token = strings.ToUpper(token)
		}
		return apitest.Do(t, base, apitest.Request{Method: "GET", Path: "/v1/image/create-and-render/" + k.APIID + "/" + token + format + "?" + query})
	}

	// The stopped engine fails the render now; the image stays, charged.
	r := get(signedQuery, "", true)
	apitest.WantError(t, r, http.StatusInternalServerError)
	if r.Header.Get("x-renders-consumed") != "1" || r.Header.Get(contract.HeaderTag) != contract.KeyTag(k.APIID) {
		t.Fatalf("first use: consumed %q, tag %q", r.Header.Get("x-renders-consumed"), r.Header.Get(contract.HeaderTag))
	}
	ids := sortedKeys(e.keys(t.Context(), "img/"))
	if len(ids) != 1 {
		t.Fatalf("images %v", ids)
	}
	id := strings.TrimPrefix(ids[0], "img/")
	requested := e.get(t.Context(), id).Params
	requested.MaxWait = 0 // as asked: creation fills in the plan's cap
	if want := rendition.ContentID(o.ID, &requested, "create-and-render"); id != want {
		t.Fatalf("image id %s, want the content id %s", id, want)
	}
	master := testPNG(t, 100, 50, 7)
	e.ready(id, master)

	tests := []struct {
		name        string
		query       string
		format      string
		upper       bool
		contentType string
	}{
		{name: "again", query: signedQuery, contentType: "image/png"},
		{name: "png", query: signedQuery, format: "/png", contentType: "image/png"},
		{name: "jpeg", query: signedQuery, format: "/JPEG", contentType: "image/jpeg"},
		{name: "webp, upper-case token", query: signedQuery, format: "/webp", upper: true, contentType: "image/webp"},
		{name: "with dedupe_duration_s", query: signedQuery + "&dedupe_duration_s=0", contentType: "image/png"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := get(tt.query, tt.format, tt.upper)
			apitest.WantStatus(t, r, http.StatusOK)
			h := r.Header
			if h.Get("Content-Type") != tt.contentType || h.Get(contract.HeaderImage) != id || h.Get("x-renders-consumed") != "0" ||
				h.Get(contract.HeaderTag) != contract.KeyTag(k.APIID) {
				t.Fatalf("type %q, image %q, consumed %q, tag %q", h.Get("Content-Type"), h.Get(contract.HeaderImage),
					h.Get("x-renders-consumed"), h.Get(contract.HeaderTag))
			}
			if tt.contentType == "image/png" && !bytes.Equal(r.Body, master) {
				t.Fatal("the body is not the master")
			}
			if e.used(t.Context(), o) != 1 {
				t.Fatalf("%d credits used", e.used(t.Context(), o))
			}
		})
	}
}

// TestContentID: a signed URL's image id depends on the organization, the
// parameters (as Canonical spells them, so equal parameters written
// differently agree) and what signed it, on nothing else, and is a valid
// UUID (version 8) that ParsePath accepts.
func TestContentID(t *testing.T) {
	base := imageparams.Params{HTML: "<p>hi</p>", Viewport: &imageparams.Size{Width: 800, Height: 600}}
	id := rendition.ContentID("org-a", &base, "create-and-render")
	with := func(change func(p *imageparams.Params)) imageparams.Params {
		p := base
		change(&p)
		return p
	}
	tests := []struct {
		name   string
		org    string
		params imageparams.Params
		extra  string
		// ref is the request compared with; nil for the base request.
		ref  *imageparams.Params
		same bool
	}{
		{name: "the same request", org: "org-a", params: base, extra: "create-and-render", same: true},
		{name: "png spelled out", org: "org-a", params: with(func(p *imageparams.Params) { p.Format = imageparams.FormatPNG }),
			extra: "create-and-render", same: true},
		{name: "a header name in another case", org: "org-a",
			params: with(func(p *imageparams.Params) { p.Headers = map[string]string{"x-a": "1"} }),
			ref:    new(with(func(p *imageparams.Params) { p.Headers = map[string]string{"X-A": "1"} })),
			extra:  "create-and-render", same: true},
		{name: "dedupe_duration_s", org: "org-a", params: with(func(p *imageparams.Params) { p.DedupeDurationS = new(60) }),
			extra: "create-and-render", same: true},
		{name: "another organization", org: "org-b", params: base, extra: "create-and-render"},
		{name: "another signer", org: "org-a", params: base, extra: "template:t1:1"},
		{name: "other html", org: "org-a", params: with(func(p *imageparams.Params) { p.HTML = "<p>ho</p>" }), extra: "create-and-render"},
		{name: "another format", org: "org-a", params: with(func(p *imageparams.Params) { p.Format = imageparams.FormatJPG }),
			extra: "create-and-render"},
		{name: "another header value", org: "org-a",
			params: with(func(p *imageparams.Params) { p.Headers = map[string]string{"X-A": "2"} }),
			ref:    new(with(func(p *imageparams.Params) { p.Headers = map[string]string{"X-A": "1"} })),
			extra:  "create-and-render"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := id
			if tt.ref != nil {
				id = rendition.ContentID("org-a", tt.ref, "create-and-render")
			}
			got := rendition.ContentID(tt.org, &tt.params, tt.extra)
			if (got == id) != tt.same {
				t.Fatalf("ContentID = %s, the other request's %s: same = %v, want %v", got, id, got == id, tt.same)
			}
			u, err := uuid.Parse(got)
			if err != nil || u.Version() != 8 || u.Variant() != uuid.RFC4122 {
				t.Fatalf("ContentID %s: version %d variant %v (%v)", got, u.Version(), u.Variant(), err)
			}
			if pid, _, ok := ParsePath(got); !ok || pid != got {
				t.Fatalf("ParsePath(%s) = %s, %v", got, pid, ok)
			}
		})
	}
}
