package perm

import (
	"slices"
	"testing"
)

func TestAllIsSortedAndValid(t *testing.T) {
	if !slices.IsSorted(all) {
		t.Fatal("all must stay sorted: Valid searches it")
	}
	if len(all) != 20 {
		t.Fatalf("%d permissions, spec §2.4 names 20", len(all))
	}
	for _, p := range all {
		if !Valid(p) {
			t.Fatalf("%s not valid", p)
		}
	}
	for _, p := range []Permission{"", "images", "images:*", "IMAGES:CREATE"} {
		if Valid(p) {
			t.Fatalf("%q valid", p)
		}
	}
}

func TestCovers(t *testing.T) {
	some := Grant{Permissions: []Permission{ImagesCreate, ImagesRead}}
	tests := []struct {
		name    string
		g, o    Grant
		ok      bool
		missing []Permission
	}{
		{"subset", some, Grant{Permissions: []Permission{ImagesRead}}, true, nil},
		{"equal", some, some, true, nil},
		{"empty", some, Grant{}, true, nil},
		{"broader", some, Grant{Permissions: []Permission{ImagesRead, UsageRead}}, false, []Permission{UsageRead}},
		{"all future needs all future", some, Grant{AllFuture: true}, false, All()},
		{"all future covers all", Grant{AllFuture: true}, Grant{AllFuture: true}, true, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ok, missing := tc.g.Covers(tc.o)
			if ok != tc.ok || !slices.Equal(missing, tc.missing) {
				t.Fatalf("Covers = %v %v, want %v %v", ok, missing, tc.ok, tc.missing)
			}
		})
	}
}
