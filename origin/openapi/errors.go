package openapi

import "errors"

// Errors of Build, wrapped with the route they concern.
var (
	// ErrUndocumented: a route of the table has no Doc and is not Hidden.
	ErrUndocumented = errors.New("route is not documented")
	// ErrNotServed: an Operation of the package is no route's Doc.
	ErrNotServed = errors.New("documented route is not in the route table")
	// ErrInvalid: the documentation of a route does not fit the route (a
	// path parameter missing or extra, two operations on one path and
	// method, a route documented and hidden).
	ErrInvalid = errors.New("documentation does not fit the route")
)
