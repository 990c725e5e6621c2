package rendition

import (
	"errors"
)

// ErrNotFound is returned for an unknown image.
var ErrNotFound = errors.New("image not found")

// errClosed is returned for work asked of a closed Service.
var errClosed = errors.New("image service closed")

// ErrTransform: a store's transformation does not fit the rendered image
// (a crop outside it, a result too large).
var ErrTransform = errors.New("transformation")
