package oauth

import "errors"

// ErrInvalidToken matches every refused access token. The error's text
// carries a short public reason ("token expired", "token revoked", ...),
// which Challenge sends as the error_description.
var ErrInvalidToken = errors.New("invalid token")

// tokenError is a refused access token with its public reason.
type tokenError struct{ reason string }

func (e *tokenError) Error() string        { return "invalid token: " + e.reason }
func (e *tokenError) Is(target error) bool { return target == ErrInvalidToken }

func invalidToken(reason string) error { return &tokenError{reason: reason} }
