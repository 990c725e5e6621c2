package apikey

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/perm"
)

// Field limits of spec §2.4.
const (
	MaxName        = 255
	MaxDescription = 2000
)

// Request is a validated create or update request (they are identical).
type Request struct {
	Name        string // "" means the default name
	Description string // "" means none
	Disabled    bool
	Grant       perm.Grant
}

// ParseRequest validates a key request body.
func ParseRequest(o *field.Object) (Request, error) {
	var errs field.Errors
	var req Request
	if name, ok := o.String(&errs, "name"); ok && strings.TrimSpace(name) != "" {
		if n := utf8.RuneCountInString(name); n > MaxName {
			errs.Add("name", "must be at most %d characters (got %d)", MaxName, n)
		}
		req.Name = name
	}
	if desc, ok := o.String(&errs, "description"); ok && strings.TrimSpace(desc) != "" {
		if n := utf8.RuneCountInString(desc); n > MaxDescription {
			errs.Add("description", "must be at most %d characters (got %d)", MaxDescription, n)
		}
		req.Description = desc
	}
	req.Disabled, _ = o.Bool(&errs, "disabled")
	req.Grant.AllFuture, _ = o.Bool(&errs, "all_future_permissions")

	names, ok := o.StringArray(&errs, "permissions")
	if !ok && !o.Present("permissions") {
		errs.Add("permissions", "is required (an array of permission names)")
	}
	for i, name := range names {
		p := perm.Permission(name)
		if !perm.Valid(p) {
			errs.Add(fmt.Sprintf("permissions[%d]", i), "unknown permission %q", name)
			continue
		}
		if !slices.Contains(req.Grant.Permissions, p) {
			req.Grant.Permissions = append(req.Grant.Permissions, p)
		}
	}
	if req.Grant.AllFuture && len(names) > 0 {
		errs.Add("permissions", "must be an empty array when all_future_permissions is true")
	}
	slices.Sort(req.Grant.Permissions)
	if req.Grant.Permissions == nil {
		req.Grant.Permissions = []perm.Permission{}
	}
	return req, errs.Err()
}
