package wasm

import (
	"errors"

	"github.com/tetratelabs/wazero/experimental"
)

// errNoRestore: this memory cannot be made the image again in place.
var errNoRestore = errors.New("memory cannot be restored in place")

var _ experimental.MemoryAllocator = (*image)(nil)

// slicedMemory is a linear memory in a Go slice, grown by copying.
type slicedMemory struct {
	buf []byte
	max uint64
}

func (m *slicedMemory) Reallocate(size uint64) []byte {
	if size > m.max && size > uint64(len(m.buf)) {
		return nil
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
		return m.buf
	}
	grown := make([]byte, size, min(max(size, 2*uint64(cap(m.buf))), max(m.max, size)))
	copy(grown, m.buf)
	m.buf = grown
	return m.buf
}

func (m *slicedMemory) Free() { m.buf = nil }
