package ogconfig

import (
	"errors"
	"fmt"
)

// Sentinel errors.
var (
	// ErrNotFound: no configuration with that id (or domain id) in the
	// organization.
	ErrNotFound = errors.New("OG configuration not found")
	// ErrConflict: another enabled configuration of the organization
	// holds the same base_url. The error is a *ConflictError.
	ErrConflict = errors.New("conflicting OG configuration")
	// ErrTemplateNotFound is what a Templates implementation wraps when the
	// organization has no such template or version.
	ErrTemplateNotFound = errors.New("template not found")
	// ErrCapped: a cap on new images refuses one. The error is a
	// *CapError.
	ErrCapped = errors.New("OG image cap reached")
)

// ConflictError names the enabled configuration that already holds an
// origin.
type ConflictError struct {
	BaseURL    string
	ExistingID string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%v: %s is already enabled for %s", ErrConflict, e.ExistingID, e.BaseURL)
}

// Is makes errors.Is(err, ErrConflict) hold.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }
