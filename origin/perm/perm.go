package perm

import (
	"slices"
)

// Permission is one operation class a key may be granted.
type Permission string

// The permissions of spec §2.4.
const (
	APIKeysCreateUpdate             Permission = "api_keys:create_update"
	APIKeysDelete                   Permission = "api_keys:delete"
	APIKeysRead                     Permission = "api_keys:read"
	ImagesCreate                    Permission = "images:create"
	ImagesDelete                    Permission = "images:delete"
	ImagesRead                      Permission = "images:read"
	ImagesStore                     Permission = "images:store"
	OGConfigsCreateUpdate           Permission = "og_configs:create_update"
	OGConfigsDelete                 Permission = "og_configs:delete"
	OGConfigsRead                   Permission = "og_configs:read"
	ProxiesCreateUpdate             Permission = "proxies:create_update"
	ProxiesDelete                   Permission = "proxies:delete"
	ProxiesRead                     Permission = "proxies:read"
	StorageDestinationsCreateUpdate Permission = "storage_destinations:create_update"
	StorageDestinationsDelete       Permission = "storage_destinations:delete"
	StorageDestinationsRead         Permission = "storage_destinations:read"
	TemplatesCreateUpdate           Permission = "templates:create_update"
	TemplatesDelete                 Permission = "templates:delete"
	TemplatesRead                   Permission = "templates:read"
	UsageRead                       Permission = "usage:read"
)

// all lists every permission in sorted order.
var all = []Permission{
	APIKeysCreateUpdate, APIKeysDelete, APIKeysRead,
	ImagesCreate, ImagesDelete, ImagesRead, ImagesStore,
	OGConfigsCreateUpdate, OGConfigsDelete, OGConfigsRead,
	ProxiesCreateUpdate, ProxiesDelete, ProxiesRead,
	StorageDestinationsCreateUpdate, StorageDestinationsDelete, StorageDestinationsRead,
	TemplatesCreateUpdate, TemplatesDelete, TemplatesRead,
	UsageRead,
}

// All returns every permission, sorted.
func All() []Permission { return slices.Clone(all) }

// Valid reports whether p is a known permission name.
func Valid(p Permission) bool {
	_, ok := slices.BinarySearch(all, p)
	return ok
}

// Grant is what a key holds: a set of permissions, or everything present and
// future.
type Grant struct {
	Permissions []Permission
	AllFuture   bool
}

// Has reports whether the grant includes p.
func (g Grant) Has(p Permission) bool {
	return g.AllFuture || slices.Contains(g.Permissions, p)
}

// Covers reports whether g is at least as broad as other, and lists what
// other has that g lacks. Only an all-future grant covers an all-future one.
func (g Grant) Covers(other Grant) (ok bool, missing []Permission) {
	if g.AllFuture {
		return true, nil
	}
	if other.AllFuture {
		return false, All()
	}
	for _, p := range other.Permissions {
		if !slices.Contains(g.Permissions, p) {
			missing = append(missing, p)
		}
	}
	return len(missing) == 0, missing
}

// Effective returns the permissions the grant gives today, sorted.
func (g Grant) Effective() []Permission {
	if g.AllFuture {
		return All()
	}
	out := slices.Clone(g.Permissions)
	slices.Sort(out)
	return slices.Compact(out)
}
