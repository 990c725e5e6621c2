package openapi

import "errors"

// Errors of Build, wrapped with the route they concern.
var (
	// ErrUndocumented: a route of the table has no documentation and is not
	// in the skip list.
	ErrUndocumented = errors.New("route is not documented")
	// ErrNotServed: documentation (or a skip entry) names a route the table
	// does not have.
	ErrNotServed = errors.New("documented route is not in the route table")
	// ErrInvalid: the documentation of a route does not fit the route (a
	// path parameter missing or extra, two operations on one path and
	// method).
	ErrInvalid = errors.New("documentation does not fit the route")
)
