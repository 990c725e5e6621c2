package images

import (
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/rendition"
)

// listPage is the body of GET /v1/images.
type listPage struct {
	Images []struct {
		ID, URL   string
		CreatedAt string `json:"created_at"`
	}
	NextPageToken *string `json:"next_page_token"`
	HasNextPage   bool    `json:"has_next_page"`
}

// TestListPages: GET /v1/images walks the organization's images newest
// first through its page tokens, and a token works only for the
// organization it was issued to.
func TestListPages(t *testing.T) {
	e := newEnv(t)
	base := e.serveHTTP(e.handler())
	o, other := e.newOrg("pro"), e.newOrg("pro")
	var newestFirst []string
	for i := range 5 {
		it := rendition.Item{Params: html(string(rune('a' + i)))}
		if i == 2 {
			it.ID = rendition.ContentID(o.ID, &it.Params, "create-and-render") // a signed URL's: its id is in no time order
		}
		newestFirst = append([]string{e.create(o, it).ID}, newestFirst...)
		e.clock.Advance(time.Second)
	}
	e.create(other, rendition.Item{Params: html("other")})
	list := func(query string, org string) *apitest.Response {
		t.Helper()
		return apitest.Do(t, base, apitest.Request{Method: "GET", Path: "/v1/images?" + query, Header: map[string]string{orgHeader: org}})
	}

	var got []string
	var tokens []string
	query := "count=2"
	for range 10 {
		r := list(query, o.ID)
		apitest.WantStatus(t, r, http.StatusOK)
		var p listPage
		r.Decode(t, &p)
		for _, img := range p.Images {
			got = append(got, img.ID)
			if img.URL != "https://api.example.test/v1/image/"+img.ID {
				t.Fatalf("url %q", img.URL)
			}
			if at, err := time.Parse("2006-01-02T15:04:05.000Z07:00", img.CreatedAt); err != nil || !at.Equal(e.get(t.Context(), img.ID).CreatedAt) {
				t.Fatalf("created_at %q (%v)", img.CreatedAt, err)
			}
		}
		if p.HasNextPage != (p.NextPageToken != nil) {
			t.Fatalf("has_next_page %v with token %v", p.HasNextPage, p.NextPageToken)
		}
		if !p.HasNextPage {
			break
		}
		tokens = append(tokens, *p.NextPageToken)
		query = "count=2&page_token=" + url.QueryEscape(*p.NextPageToken)
	}
	if !slices.Equal(got, newestFirst) || len(tokens) != 2 {
		t.Fatalf("pages gave %v with %d tokens, want %v", got, len(tokens), newestFirst)
	}
	r := list("page_token="+url.QueryEscape(tokens[0]), other.ID)
	apitest.WantField(t, r, "page_token")
}

// TestListRefusesBadInput: a bad count or page token is a 400 naming it.
func TestListRefusesBadInput(t *testing.T) {
	e := newEnv(t)
	base := e.serveHTTP(e.handler())
	o := e.newOrg("pro")
	tests := []struct {
		name  string
		query string
		field string
	}{
		{name: "count 0", query: "count=0", field: "count"},
		{name: "count past the maximum", query: "count=51", field: "count"},
		{name: "count not a number", query: "count=ten", field: "count"},
		{name: "token not issued here", query: "page_token=abc", field: "page_token"},
		{name: "token of another scope", query: "page_token=" + url.QueryEscape(e.handler().Cursors.Encode("templates/"+o.ID, "x")),
			field: "page_token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: "/v1/images?" + tt.query, Header: as(o)})
			apitest.WantField(t, r, tt.field)
		})
	}
}
