//go:build !linux

package wasm

import "github.com/tetratelabs/wazero/experimental"

// image is the guest's linear memory right after its initialization;
// each instance gets a copy (Linux maps it copy-on-write instead).
type image struct{ snapshot []byte }

func newImage(snapshot []byte) (*image, error) {
	return &image{snapshot: append([]byte(nil), snapshot...)}, nil
}

// Allocate implements experimental.MemoryAllocator.
func (im *image) Allocate(_, max uint64) experimental.LinearMemory {
	return &slicedMemory{buf: append([]byte(nil), im.snapshot...), max: max}
}

func (im *image) close() error { return nil }

// restore is not implemented here: instances are used once.
func (im *image) restore(experimental.LinearMemory, []byte, []byte) (int, error) {
	return 0, errNoRestore
}
