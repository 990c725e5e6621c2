package image

import (
	"errors"
)

// ErrNotFound is returned for an unknown image.
var ErrNotFound = errors.New("image not found")
