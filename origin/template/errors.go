package template

import "errors"

// Sentinel errors.
var (
	ErrNotFound = errors.New("template not found")
	ErrLimit    = errors.New("template limit of the plan reached")
)
