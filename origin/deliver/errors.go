package deliver

import "errors"

// ErrUnavailable: an image's destination cannot be written now (deleted,
// disabled, or its secret does not open); the error's text says which, in
// words fit for the organization.
var ErrUnavailable = errors.New("storage destination unavailable")
