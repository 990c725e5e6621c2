package origins

import "errors"

var (
	// ErrNoOrigin reports a pool without any origin URL.
	ErrNoOrigin = errors.New("no origin URL")
	// ErrBadURL reports an origin URL that is not an absolute http(s) URL.
	ErrBadURL = errors.New("want an absolute http(s) URL")
	// ErrDuplicate reports an origin given twice, however spelled.
	ErrDuplicate = errors.New("the same origin is given twice")
	// errUnhealthy reports a health check answered with another status than 200.
	errUnhealthy = errors.New("health check failed")
)
