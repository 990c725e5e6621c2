package resource_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/storetest"
	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/cursor"
	"github.com/pictorhq/pictor/origin/egress"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/resource"
)

// itemView is an item in answers.
type itemView struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

var errTaken = errors.New("label taken")

// itemRoutes refuses the free plan, answers errNoItem 404 and errTaken 409.
var itemRoutes = resource.Routes[item, itemView]{
	Name: "item",
	Check: func(o *org.Org) error {
		if o.Plan == "free" {
			return apierr.Forbidden("Items need a paid plan")
		}
		return nil
	},
	Errors: func(err error) error {
		if errors.Is(err, errTaken) {
			return apierr.New(http.StatusConflict, "Label taken")
		}
		return resource.NotFound(err, errNoItem, "Item not found")
	},
	View:  func(i *item) itemView { return itemView{ID: i.ID, Label: i.Label} },
	Scope: "items/",
	ID:    func(i *item) string { return i.ID },
}

// itemSite serves /items with the kit's handlers over a real store. The
// caller is the organization of the X-Org header (plan X-Plan, "pro" when
// absent); without the header the request has no principal, as a route
// wrongly left public.
type itemSite struct {
	base  string
	store *resource.Store[item]
	works atomic.Int32 // routes' work run
}

func startItems(t *testing.T) *itemSite {
	t.Helper()
	s := &itemSite{store: resource.NewStore(storetest.Pebble.Open(t, 1)[0], spec)}
	codec := cursor.New([]byte("0123456789abcdef0123456789abcdef"))
	// label reads the body's label; a missing one is a 400 of the work.
	label := func(r *http.Request) (string, error) {
		var body struct{ Label string }
		if json.NewDecoder(r.Body).Decode(&body) != nil || body.Label == "" {
			return "", apierr.Field("label", "is required")
		}
		return body.Label, nil
	}
	taken := func(txn kv.Txn, label string) error {
		if _, err := txn.Get(t.Context(), labelKey(label)); err == nil {
			return errTaken
		}
		return nil
	}
	wrap := func(h func(w http.ResponseWriter, r *http.Request) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if o := r.Header.Get("X-Org"); o != "" {
				plan := r.Header.Get("X-Plan")
				if plan == "" {
					plan = "pro"
				}
				r = r.WithContext(auth.WithPrincipal(r.Context(), &auth.Principal{Org: &org.Org{ID: o, Plan: plan}}))
			}
			if err := h(w, r); err != nil {
				apierr.Write(w, r, err)
			}
		}
	}
	mux := http.NewServeMux()
	mux.Handle("POST /items", wrap(func(w http.ResponseWriter, r *http.Request) error {
		return itemRoutes.Collection(w, r, func(p *auth.Principal) (*item, error) {
			s.works.Add(1)
			l, err := label(r)
			if err != nil {
				return nil, err
			}
			it := newItem(p.Org.ID, l)
			return it, s.store.Create(r.Context(), it, func(txn kv.Txn) error { return taken(txn, l) })
		})
	}))
	mux.Handle("GET /items", wrap(func(w http.ResponseWriter, r *http.Request) error {
		return itemRoutes.List(w, r, codec, func(ctx context.Context, orgID, after string, count int) ([]*item, bool, error) {
			s.works.Add(1)
			return s.store.List(ctx, orgID, after, count, nil)
		})
	}))
	mux.Handle("GET /items/{id}", wrap(func(w http.ResponseWriter, r *http.Request) error {
		return itemRoutes.One(w, r, func(p *auth.Principal, id string) (*item, error) {
			s.works.Add(1)
			return s.store.Get(r.Context(), p.Org.ID, id)
		})
	}))
	mux.Handle("POST /items/{id}", wrap(func(w http.ResponseWriter, r *http.Request) error {
		return itemRoutes.One(w, r, func(p *auth.Principal, id string) (*item, error) {
			s.works.Add(1)
			l, err := label(r)
			if err != nil {
				return nil, err
			}
			return s.store.Update(r.Context(), p.Org.ID, id, func(txn kv.Txn, cur *item) error {
				cur.Label = l
				return taken(txn, l)
			})
		})
	}))
	mux.Handle("DELETE /items/{id}", wrap(func(w http.ResponseWriter, r *http.Request) error {
		return itemRoutes.Remove(w, r, func(p *auth.Principal, id string) error {
			s.works.Add(1)
			_, err := s.store.Delete(r.Context(), p.Org.ID, id)
			return err
		})
	}))
	s.base = serve(t, mux)
	return s
}

func (s *itemSite) do(t *testing.T, method, path, orgID, plan string, body any) *apitest.Response {
	t.Helper()
	h := map[string]string{}
	if orgID != "" {
		h["X-Org"] = orgID
	}
	if plan != "" {
		h["X-Plan"] = plan
	}
	return apitest.Do(t, s.base, apitest.Request{Method: method, Path: path, Header: h, JSON: body})
}

// TestRoutes: the kit's handlers over HTTP: a record's answers (200 with
// its view, 204 for a deletion), the resource's errors mapped wherever the
// work returns them and the work's own answers left as they are, another
// organization's record answered as an unknown one.
func TestRoutes(t *testing.T) {
	s := startItems(t)
	created := s.do(t, "POST", "/items", "o1", "", map[string]string{"label": "a"})
	apitest.WantStatus(t, created, http.StatusOK)
	var v itemView
	created.Decode(t, &v)
	if v.Label != "a" || uuid.Validate(v.ID) != nil {
		t.Fatalf("created %s", created.Body)
	}
	get := s.do(t, "GET", "/items/"+strings.ToUpper(v.ID), "o1", "", nil)
	apitest.WantStatus(t, get, http.StatusOK)
	if string(get.Body) != string(created.Body) {
		t.Fatalf("read %s, created %s", get.Body, created.Body)
	}

	other := s.do(t, "GET", "/items/"+v.ID, "o2", "", nil)
	unknown := s.do(t, "GET", "/items/"+uuid.NewString(), "o1", "", nil)
	if m := apitest.WantError(t, other, http.StatusNotFound); m["message"] != "Item not found" || string(other.Body) != string(unknown.Body) {
		t.Fatalf("another organization's item %s, an unknown one %s", other.Body, unknown.Body)
	}

	s.do(t, "POST", "/items", "o1", "", map[string]string{"label": "b"})
	apitest.WantError(t, s.do(t, "POST", "/items", "o1", "", map[string]string{"label": "b"}), http.StatusConflict)
	apitest.WantError(t, s.do(t, "POST", "/items/"+v.ID, "o1", "", map[string]string{"label": "b"}), http.StatusConflict)
	apitest.WantField(t, s.do(t, "POST", "/items/"+v.ID, "o1", "", map[string]string{}), "label")
	updated := s.do(t, "POST", "/items/"+v.ID, "o1", "", map[string]string{"label": "c"})
	apitest.WantStatus(t, updated, http.StatusOK)
	if updated.Decode(t, &v); v.Label != "c" {
		t.Fatalf("updated %s", updated.Body)
	}

	// Another organization's record is, to an update or a deletion too,
	// answered byte for byte as an unknown one, and left as it was.
	for _, method := range []string{"POST", "DELETE"} {
		body := map[string]string{"label": "theirs now"}
		foreign := s.do(t, method, "/items/"+v.ID, "o2", "", body)
		missing := s.do(t, method, "/items/"+uuid.NewString(), "o2", "", body)
		if m := apitest.WantError(t, foreign, http.StatusNotFound); m["message"] != "Item not found" || string(foreign.Body) != string(missing.Body) {
			t.Fatalf("%s of another organization's item %s, of an unknown one %s", method, foreign.Body, missing.Body)
		}
	}
	if still := s.do(t, "GET", "/items/"+v.ID, "o1", "", nil); string(still.Body) != string(updated.Body) {
		t.Fatalf("after another organization's attempts %s, want %s", still.Body, updated.Body)
	}
	gone := s.do(t, "DELETE", "/items/"+v.ID, "o1", "", nil)
	apitest.WantStatus(t, gone, http.StatusNoContent)
	if len(gone.Body) != 0 {
		t.Fatalf("a deletion answered %s", gone.Body)
	}
	// A deleted record is not found by any route.
	for _, m := range []string{"GET", "POST", "DELETE"} {
		r := s.do(t, m, "/items/"+v.ID, "o1", "", map[string]string{"label": "d"})
		apitest.WantMessage(t, apitest.WantError(t, r, http.StatusNotFound), "Item not found")
	}
}

// TestRoutesAdmission: a request without a principal is a 500, one whose
// organization Check refuses is Check's answer whatever its id and body,
// and a bad id is the 400 naming id; none of them runs the route's work.
func TestRoutesAdmission(t *testing.T) {
	s := startItems(t)
	calls := []struct{ method, path string }{
		{"POST", "/items"}, {"GET", "/items"},
		{"GET", "/items/" + uuid.NewString()}, {"POST", "/items/" + uuid.NewString()}, {"DELETE", "/items/" + uuid.NewString()},
		{"GET", "/items/nope"}, {"POST", "/items/nope"}, {"DELETE", "/items/nope"},
	}
	for _, c := range calls {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			apitest.WantError(t, s.do(t, c.method, c.path, "", "", map[string]string{"label": "a"}), http.StatusInternalServerError)
			r := s.do(t, c.method, c.path, "o1", "free", map[string]string{"label": "a"})
			apitest.WantMessage(t, apitest.WantError(t, r, http.StatusForbidden), "Items need a paid plan")
			if strings.HasSuffix(c.path, "/nope") {
				r := s.do(t, c.method, c.path, "o1", "", map[string]string{"label": "a"})
				apitest.WantField(t, r, "id")
				apitest.WantMessage(t, apitest.WantError(t, r, http.StatusBadRequest), "is not a valid item id")
			}
			if n := s.works.Load(); n != 0 {
				t.Fatalf("the work ran %d times", n)
			}
		})
	}
}

// listPage is a page of GET /items.
type listPage struct {
	Data       []itemView `json:"data"`
	Pagination struct {
		NextPageStart *string `json:"next_page_start"`
	} `json:"pagination"`
}

// TestRoutesList: the caller's records newest first in pages, each as
// its view; a cursor is the scope's, so another organization's is a 400.
// The default page is cursor.DefaultCount records, a page holding exactly
// the rest names no next one, and an organization without records gets
// an empty list ([], not null) without a cursor.
func TestRoutesList(t *testing.T) {
	s := startItems(t)
	for _, l := range []string{"a", "b", "c"} {
		apitest.WantStatus(t, s.do(t, "POST", "/items", "o1", "", map[string]string{"label": l}), http.StatusOK)
	}
	for _, tc := range []struct {
		name, query string
		want        int
		next        bool
	}{
		{"exactly the rest", "?count=3", 3, false},
		{"the largest page", "?count=100", 3, false},
		{"one", "?count=1", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p listPage
			s.do(t, "GET", "/items"+tc.query, "o1", "", nil).Decode(t, &p)
			if len(p.Data) != tc.want || (p.Pagination.NextPageStart != nil) != tc.next {
				t.Fatalf("%d items, next %v; want %d, next %v", len(p.Data), p.Pagination.NextPageStart, tc.want, tc.next)
			}
		})
	}
	empty := s.do(t, "GET", "/items", "o3", "", nil)
	apitest.WantStatus(t, empty, http.StatusOK)
	if want := `{"data":[],"pagination":{"next_page_start":null}}`; strings.TrimSpace(string(empty.Body)) != want {
		t.Fatalf("an empty list %s, want %s", empty.Body, want)
	}
	for i := range cursor.DefaultCount + 2 {
		apitest.WantStatus(t, s.do(t, "POST", "/items", "o4", "", map[string]string{"label": fmt.Sprint("d", i)}), http.StatusOK)
	}
	var def listPage
	s.do(t, "GET", "/items", "o4", "", nil).Decode(t, &def)
	if len(def.Data) != cursor.DefaultCount || def.Data[0].Label != fmt.Sprint("d", cursor.DefaultCount+1) || def.Pagination.NextPageStart == nil {
		t.Fatalf("the default page: %d items from %+v, next %v", len(def.Data), def.Data[:1], def.Pagination.NextPageStart)
	}
	apitest.WantStatus(t, s.do(t, "POST", "/items", "o2", "", map[string]string{"label": "theirs"}), http.StatusOK)
	var labels []string
	q := url.Values{"count": {"2"}}
	var first string
	for {
		r := s.do(t, "GET", "/items?"+q.Encode(), "o1", "", nil)
		apitest.WantStatus(t, r, http.StatusOK)
		var p listPage
		r.Decode(t, &p)
		for _, v := range p.Data {
			labels = append(labels, v.Label)
		}
		if p.Pagination.NextPageStart == nil {
			break
		}
		if first == "" {
			first = *p.Pagination.NextPageStart
		}
		q.Set("page_start", *p.Pagination.NextPageStart)
	}
	if got := strings.Join(labels, ","); got != "c,b,a" {
		t.Fatalf("listed %s", got)
	}
	apitest.WantField(t, s.do(t, "GET", "/items?page_start="+url.QueryEscape(first), "o2", "", nil), "page_start")
}

// TestNotify: an unset hook is nothing to do; a set one gets the value and
// its error is returned.
func TestNotify(t *testing.T) {
	if err := resource.Notify[string](context.Background(), nil, "x"); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	var got string
	err := resource.Notify(context.Background(), func(_ context.Context, s string) error { got = s; return boom }, "x")
	if got != "x" || !errors.Is(err, boom) {
		t.Fatalf("hook got %q, returned %v", got, err)
	}
}

// TestStamps: UTC with milliseconds, last in the view that embeds them.
func TestStamps(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 6_789_000, time.FixedZone("X", 3600))
	v := struct {
		ID string `json:"id"`
		resource.Stamps
	}{ID: "i", Stamps: resource.NewStamps(created, created.Add(time.Hour))}
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"id":"i","created_at":"2026-01-02T02:04:05.006Z","updated_at":"2026-01-02T03:04:05.006Z"}`; string(raw) != want {
		t.Fatalf("%s, want %s", raw, want)
	}
}

// TestNoLookup: with NoLookup a check refuses literals and local names
// the egress refuses and leaves any other name unresolved (not refused).
func TestNoLookup(t *testing.T) {
	for _, tc := range []struct {
		host    string
		blocked bool
	}{
		{"127.0.0.1", true},
		{"[::1]", true},
		{"localhost", true},
		{"169.254.169.254", true},
		{"8.8.8.8", false},
		{"example.com", false},
	} {
		t.Run(tc.host, func(t *testing.T) {
			_, err := egress.Check(context.Background(), resource.NoLookup, tc.host, false)
			if errors.Is(err, egress.ErrBlockedAddress) != tc.blocked {
				t.Fatalf("%v, blocked want %v", err, tc.blocked)
			}
			if !tc.blocked && strings.Contains(tc.host, "example") && !errors.Is(err, egress.ErrResolve) {
				t.Fatalf("a name: %v, want egress.ErrResolve", err)
			}
		})
	}
}
