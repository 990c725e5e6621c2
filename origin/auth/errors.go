package auth

import "errors"

// Errors an Authenticator returns; each becomes a 401.
var (
	ErrInvalid   = errors.New("invalid credentials")
	ErrDisabled  = errors.New("API key is disabled")
	ErrSuspended = errors.New("organization is suspended")
)
