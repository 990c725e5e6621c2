package proxy

import (
	"errors"
	"fmt"
)

// Sentinel errors.
var (
	// ErrNotFound: no proxy with that id in the organization.
	ErrNotFound = errors.New("proxy not found")
	// ErrCannotRetain: authentication.retain_password asked to keep a
	// password that may not be kept (see RetainError). The error is a
	// *RetainError.
	ErrCannotRetain = errors.New("the stored proxy password cannot be kept")
)

// RetainError says why retain_password was refused. Its text never holds a
// password.
type RetainError struct {
	// Problem completes "authentication.retain_password ...".
	Problem string
}

func (e *RetainError) Error() string {
	return fmt.Sprintf("%v: retain_password %s", ErrCannotRetain, e.Problem)
}

// Is makes errors.Is(err, ErrCannotRetain) hold.
func (e *RetainError) Is(target error) bool { return target == ErrCannotRetain }
