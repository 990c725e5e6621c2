package resource_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/cursor"
	"github.com/pictorhq/pictor/origin/resource"
	"github.com/pictorhq/pictor/origin/respond"
)

// serve starts a server over loopback with the routes of mux.
func serve(t *testing.T, mux *http.ServeMux) string {
	t.Helper()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestPathID: the {id} segment is a UUID in its 36-character form,
// answered in lower case; anything else is the standard 400 naming id
// with the resource's word.
func TestPathID(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /things/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, err := resource.PathID(r, "thing")
		if err != nil {
			apierr.Write(w, r, err)
			return
		}
		respond.JSON(w, r, http.StatusOK, map[string]string{"id": id})
	})
	base := serve(t, mux)
	id := uuid.NewString()
	for _, tc := range []struct {
		name, seg, want string // want "" for a 400
	}{
		{"lower", id, id},
		{"upper", strings.ToUpper(id), id},
		{"not a uuid", "nope", ""},
		{"no hyphens", strings.ReplaceAll(id, "-", ""), ""},
		{"braces", "%7B" + id + "%7D", ""},
		{"urn", "urn:uuid:" + id, ""},
		{"one short", id[:35], ""},
		{"one more", id + "0", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := apitest.Do(t, base, apitest.Request{Method: "GET", Path: "/things/" + tc.seg})
			if tc.want == "" {
				apitest.WantField(t, resp, "id")
				if !strings.Contains(string(resp.Body), "is not a valid thing id") {
					t.Fatalf("body %s", resp.Body)
				}
				return
			}
			apitest.WantStatus(t, resp, http.StatusOK)
			if got := resp.Object(t)["id"]; got != tc.want {
				t.Fatalf("id = %v, want %s", got, tc.want)
			}
		})
	}
}

// FuzzPathID: whatever the segment, PathID returns a 400 naming id, or a
// 36-character lower-case UUID equal to the segment but for case.
func FuzzPathID(f *testing.F) {
	for _, s := range []string{uuid.NewString(), strings.ToUpper(uuid.NewString()), "", "{" + uuid.NewString() + "}", "urn:uuid:" + uuid.NewString(), "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seg string) {
		r, _ := http.NewRequest("GET", "/", nil)
		r.SetPathValue("id", seg)
		id, err := resource.PathID(r, "thing")
		if err != nil {
			e := apierr.From(err)
			if e.Status != http.StatusBadRequest || len(e.Fields) != 1 || e.Fields[0].Path != "id" {
				t.Fatalf("%q: %+v", seg, e)
			}
			return
		}
		if _, perr := uuid.Parse(id); perr != nil || len(id) != 36 || id != strings.ToLower(id) || !strings.EqualFold(id, seg) {
			t.Fatalf("%q accepted as %q", seg, id)
		}
	})
}

// TestNotFound: the resource's sentinel, wrapped or not, is the standard
// 404 with the resource's message byte for byte; another error is left
// as it is.
func TestNotFound(t *testing.T) {
	errGone := errors.New("thing gone")
	other := errors.New("disk on fire")
	if got := resource.NotFound(other, errGone, "Thing not found"); got != other {
		t.Fatalf("another error became %v", got)
	}
	if got := resource.NotFound(nil, errGone, "Thing not found"); got != nil {
		t.Fatalf("nil became %v", got)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /gone", func(w http.ResponseWriter, r *http.Request) {
		apierr.Write(w, r, resource.NotFound(fmt.Errorf("look up: %w", errGone), errGone, "Thing 100% not found"))
	})
	resp := apitest.Do(t, serve(t, mux), apitest.Request{Method: "GET", Path: "/gone"})
	if m := apitest.WantError(t, resp, http.StatusNotFound); m["message"] != "Thing 100% not found" {
		t.Fatalf("message %q", m["message"])
	}
}

// TestServeList: pages of a cursor list over HTTP: the envelope, a cursor
// only while more follow, and 400s naming count or page_start for a bad
// query, a tampered cursor and another scope's cursor.
func TestServeList(t *testing.T) {
	codec := cursor.New([]byte("0123456789abcdef0123456789abcdef"))
	all := []string{"e", "d", "c", "b", "a"} // newest first
	list := func(after string, count int) ([]string, bool, error) {
		i := 0
		if after != "" {
			i = slices.Index(all, after) + 1
		}
		end := min(i+count, len(all))
		return all[i:end], end < len(all), nil
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /things", func(w http.ResponseWriter, r *http.Request) {
		if err := resource.ServeList(w, r, codec, "things/"+r.URL.Query().Get("org"), list,
			strings.ToUpper, func(s string) string { return s }); err != nil {
			apierr.Write(w, r, err)
		}
	})
	base := serve(t, mux)
	type page struct {
		Data       []string `json:"data"`
		Pagination struct {
			NextPageStart *string `json:"next_page_start"`
		} `json:"pagination"`
	}
	get := func(q url.Values) *apitest.Response {
		return apitest.Do(t, base, apitest.Request{Method: "GET", Path: "/things?" + q.Encode()})
	}

	var seen []string
	var pages int
	q := url.Values{"org": {"o1"}, "count": {"2"}}
	for {
		resp := get(q)
		apitest.WantStatus(t, resp, http.StatusOK)
		var p page
		resp.Decode(t, &p)
		seen = append(seen, p.Data...)
		pages++
		if p.Pagination.NextPageStart == nil {
			break
		}
		q.Set("page_start", *p.Pagination.NextPageStart)
	}
	if want := []string{"E", "D", "C", "B", "A"}; !slices.Equal(seen, want) || pages != 3 {
		t.Fatalf("%d pages of %v, want 3 of %v", pages, seen, want)
	}
	resp := get(url.Values{"org": {"o1"}})
	var p page
	resp.Decode(t, &p)
	if len(p.Data) != 5 || p.Pagination.NextPageStart != nil || !strings.Contains(string(resp.Body), `"next_page_start":null`) {
		t.Fatalf("default count: %s", resp.Body)
	}

	token := codec.Encode("things/o1", "c")
	for _, tc := range []struct {
		name  string
		q     url.Values
		field string
	}{
		{"count zero", url.Values{"org": {"o1"}, "count": {"0"}}, "count"},
		{"count too large", url.Values{"org": {"o1"}, "count": {"101"}}, "count"},
		{"count not a number", url.Values{"org": {"o1"}, "count": {"ten"}}, "count"},
		{"tampered cursor", url.Values{"org": {"o1"}, "page_start": {token + "x"}}, "page_start"},
		{"another scope's cursor", url.Values{"org": {"o2"}, "page_start": {token}}, "page_start"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			apitest.WantField(t, get(tc.q), tc.field)
		})
	}

	// A store error is answered as such, not as a page.
	mux.HandleFunc("GET /broken", func(w http.ResponseWriter, r *http.Request) {
		if err := resource.ServeList(w, r, codec, "s", func(string, int) ([]string, bool, error) {
			return nil, false, apierr.New(http.StatusServiceUnavailable, "store away")
		}, strings.ToUpper, func(s string) string { return s }); err != nil {
			apierr.Write(w, r, err)
		}
	})
	apitest.WantError(t, apitest.Do(t, base, apitest.Request{Method: "GET", Path: "/broken"}), http.StatusServiceUnavailable)
}
