package apikey

import (
	"slices"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/perm"
)

func parse(t *testing.T, body string) (Request, error) {
	t.Helper()
	o, err := field.ParseJSON([]byte(body))
	if err != nil {
		return Request{}, err
	}
	return ParseRequest(o)
}

func TestParseRequest(t *testing.T) {
	tests := []struct {
		name string
		body string
		want Request
		bad  []string // field paths
	}{
		{name: "minimal", body: `{"permissions":[]}`, want: Request{Grant: perm.Grant{Permissions: []perm.Permission{}}}},
		{name: "null optionals", body: `{"permissions":[],"name":null,"description":null,"disabled":null}`, want: Request{Grant: perm.Grant{Permissions: []perm.Permission{}}}},
		{name: "blank name and description", body: `{"permissions":[],"name":"  ","description":"\t"}`, want: Request{Grant: perm.Grant{Permissions: []perm.Permission{}}}},
		{name: "sorted and deduplicated", body: `{"permissions":["usage:read","images:create","usage:read"],"name":"n","description":"d","disabled":true}`,
			want: Request{Name: "n", Description: "d", Disabled: true, Grant: perm.Grant{Permissions: []perm.Permission{"images:create", "usage:read"}}}},
		{name: "all future", body: `{"permissions":[],"all_future_permissions":true}`, want: Request{Grant: perm.Grant{Permissions: []perm.Permission{}, AllFuture: true}}},
		{name: "several errors at once", body: `{"permissions":["x", 1],"name":5,"disabled":"no"}`, bad: []string{"name", "disabled", "permissions[0]", "permissions[1]"}},
		{name: "missing permissions", body: `{}`, bad: []string{"permissions"}},
		{name: "permissions object", body: `{"permissions":{}}`, bad: []string{"permissions"}},
		{name: "all future with grants", body: `{"permissions":["images:create"],"all_future_permissions":true}`, bad: []string{"permissions"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parse(t, tc.body)
			if tc.bad == nil {
				if err != nil {
					t.Fatal(err)
				}
				if got.Name != tc.want.Name || got.Description != tc.want.Description || got.Disabled != tc.want.Disabled ||
					got.Grant.AllFuture != tc.want.Grant.AllFuture || !slices.Equal(got.Grant.Permissions, tc.want.Grant.Permissions) {
					t.Fatalf("got %+v, want %+v", got, tc.want)
				}
				return
			}
			e, ok := err.(*apierr.Error)
			if !ok || e.Status != 400 {
				t.Fatalf("err = %v, want a 400", err)
			}
			var paths []string
			for _, f := range e.Fields {
				paths = append(paths, f.Path)
			}
			for _, p := range tc.bad {
				if !slices.Contains(paths, p) {
					t.Fatalf("errors %v do not name %s", paths, p)
				}
			}
		})
	}
}

// FuzzParseRequest: any body either parses into a valid request or fails
// with a 400 that names at least one field (or the body itself), never panics.
func FuzzParseRequest(f *testing.F) {
	for _, seed := range []string{
		`{"permissions":[]}`, `{"permissions":["images:create"],"name":"x"}`, `{"permissions":null}`,
		`{"all_future_permissions":true,"permissions":[]}`, `[]`, `{`, `{"name":"\u0000"}`, `null`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		o, err := field.ParseJSON(body)
		if err != nil {
			if e, ok := err.(*apierr.Error); !ok || e.Status != 400 {
				t.Fatalf("body error %v is not a 400", err)
			}
			return
		}
		req, err := ParseRequest(o)
		if err != nil {
			e, ok := err.(*apierr.Error)
			if !ok || e.Status != 400 || len(e.Fields) == 0 {
				t.Fatalf("invalid request error %v has no fields", err)
			}
			return
		}
		for _, p := range req.Grant.Permissions {
			if !perm.Valid(p) {
				t.Fatalf("accepted unknown permission %q", p)
			}
		}
		if req.Grant.AllFuture && len(req.Grant.Permissions) > 0 {
			t.Fatal("accepted all_future_permissions with explicit permissions")
		}
		if len([]rune(req.Name)) > MaxName || len([]rune(req.Description)) > MaxDescription {
			t.Fatal("accepted an over-long name or description")
		}
	})
}
