package cursor

import "errors"

// ErrInvalid is returned for a token that was not issued for the scope.
var ErrInvalid = errors.New("invalid pagination cursor")
