package org

import "errors"

// Sentinel errors.
var (
	ErrNotFound    = errors.New("organization not found")
	ErrUnknownPlan = errors.New("unknown plan")
	ErrInvalidName = errors.New("organization name must be 1 to 255 characters")
)
