package images

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/rendition"
)

// TestDelete: DELETE answers 202 once the image is gone, and 404 for
// what is not an image of the caller's organization, which it leaves;
// a batch delete skips unknown and foreign ids alike, refuses ids that
// are not image ids, and deletes upper-case spellings of its ids.
func TestDelete(t *testing.T) {
	var purged [][]string
	e := newEnv(t, func(cfg *rendition.Config) {
		cfg.OnDelete = func(_ context.Context, ids []string) error {
			purged = append(purged, ids)
			return nil
		}
	})
	base := e.serveHTTP(e.handler())
	o, other := e.newOrg("pro"), e.newOrg("pro")
	mine := func() string { return e.create(o, rendition.Item{Params: html("x")}).ID }
	foreign := e.create(other, rendition.Item{Params: html("x")}).ID
	del := func(path string, body any) *apitest.Response {
		t.Helper()
		return apitest.Do(t, base, apitest.Request{Method: "DELETE", Path: path, JSON: body, Header: as(o)})
	}

	tests := []struct {
		name    string
		path    string
		body    func() (any, []string) // the body, and the ids it should delete
		status  int
		field   string
		message string
	}{
		{name: "an image", status: 202, body: func() (any, []string) { id := mine(); return nil, []string{id} }},
		{name: "with an extension", path: "/v1/image/%s.png", status: 404, message: "Image not found",
			body: func() (any, []string) { return nil, []string{mine()} }},
		{name: "unknown", path: "/v1/image/0195f0a0-0000-7000-8000-000000000000", status: 404},
		{name: "another organization's", path: "/v1/image/" + foreign, status: 404},
		{name: "batch", path: "/v1/image/batch", status: 202, body: func() (any, []string) {
			a, b := mine(), mine()
			return map[string]any{"ids": []string{strings.ToUpper(a), foreign, "0195f0a0-0000-7000-8000-000000000000", b}}, []string{a, b}
		}},
		{name: "batch without ids", path: "/v1/image/batch", body: func() (any, []string) { return map[string]any{}, nil },
			status: 400, field: "ids"},
		{name: "batch with a bad id", path: "/v1/image/batch", status: 400, field: "ids[1]",
			body: func() (any, []string) { return map[string]any{"ids": []string{mine(), mine() + ".png"}}, nil }},
		{name: "batch too large", path: "/v1/image/batch", status: 400, field: "ids", message: "at most 1000",
			body: func() (any, []string) {
				ids := make([]string, MaxDeleteBatch+1)
				for i := range ids {
					ids[i] = fmt.Sprintf("0195f0a0-0000-7000-8000-%012d", i)
				}
				return map[string]any{"ids": ids}, nil
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body any
			var ids []string
			if tt.body != nil {
				body, ids = tt.body()
			}
			path := tt.path
			switch {
			case path == "":
				path = "/v1/image/" + ids[0]
			case strings.Contains(path, "%s"):
				path = fmt.Sprintf(path, ids[0])
			}
			purged = nil
			r := del(path, body)
			if tt.status != http.StatusAccepted {
				m := apitest.WantError(t, r, tt.status)
				apitest.WantMessage(t, m, tt.message)
				if tt.field != "" {
					apitest.WantField(t, r, tt.field)
				}
				for _, id := range ids {
					e.get(t.Context(), id) // still there
				}
				e.get(t.Context(), foreign)
				if purged != nil {
					t.Fatalf("a refused delete purged %v", purged)
				}
				return
			}
			apitest.WantStatus(t, r, http.StatusAccepted)
			for _, id := range ids {
				if _, err := e.svc.Get(t.Context(), id); err == nil {
					t.Fatalf("image %s is still there", id)
				}
			}
			e.get(t.Context(), foreign)
			if len(purged) != 1 || strings.Join(purged[0], ",") != strings.Join(ids, ",") {
				t.Fatalf("purged %v, want %v", purged, ids)
			}
		})
	}
}
