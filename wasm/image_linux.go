package wasm

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"github.com/tetratelabs/wazero/experimental"
)

// image is the guest's linear memory right after its initialization,
// in a memfd. Each instance's memory maps it copy-on-write: a new
// instance costs a mapping, not a copy, and what an evaluation writes
// stays in its own pages, dropped when the instance closes.
type image struct {
	fd   int
	size int
}

// sysMemfdCreate is memfd_create's number (package syscall predates it).
var sysMemfdCreate = map[string]uintptr{"amd64": 319, "arm64": 279, "riscv64": 279, "loong64": 279}[runtime.GOARCH]

func newImage(snapshot []byte) (*image, error) {
	fd, err := memfd()
	if err != nil {
		return nil, err
	}
	for b := snapshot; len(b) > 0; {
		n, err := syscall.Write(fd, b)
		if err != nil {
			syscall.Close(fd)
			return nil, fmt.Errorf("write memory image: %w", err)
		}
		b = b[n:]
	}
	return &image{fd: fd, size: len(snapshot)}, nil
}

// memfd returns an anonymous file: a memfd, or an unlinked temporary
// file where memfd_create is not known.
func memfd() (int, error) {
	if sysMemfdCreate != 0 {
		name := []byte("pictor-guest\x00")
		fd, _, errno := syscall.Syscall(sysMemfdCreate, uintptr(unsafe.Pointer(&name[0])), 1 /* MFD_CLOEXEC */, 0)
		if errno == 0 {
			return int(fd), nil
		}
	}
	f, err := os.CreateTemp("", "pictor-guest-*")
	if err != nil {
		return -1, fmt.Errorf("memory image file: %w", err)
	}
	defer f.Close()
	os.Remove(f.Name())
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		return -1, fmt.Errorf("memory image file: %w", err)
	}
	syscall.CloseOnExec(fd)
	return fd, nil
}

// Allocate implements experimental.MemoryAllocator: max bytes of
// address space, the image mapped privately over its start.
func (im *image) Allocate(_, max uint64) experimental.LinearMemory {
	size := max
	if size < uint64(im.size) {
		size = uint64(im.size)
	}
	buf, err := syscall.Mmap(-1, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|syscall.MAP_NORESERVE)
	if err != nil {
		return im.copyMemory(max)
	}
	_, _, errno := syscall.Syscall6(syscall.SYS_MMAP, uintptr(unsafe.Pointer(&buf[0])), uintptr(im.size),
		syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_FIXED, uintptr(im.fd), 0)
	if errno != 0 {
		syscall.Munmap(buf)
		return im.copyMemory(max)
	}
	return &mappedMemory{buf: buf}
}

// copyMemory is the fallback when mapping fails: a copy in Go memory.
func (im *image) copyMemory(max uint64) experimental.LinearMemory {
	buf := make([]byte, im.size)
	if _, err := syscall.Pread(im.fd, buf, 0); err != nil {
		return nil
	}
	return &slicedMemory{buf: buf, max: max}
}

func (im *image) close() error { return syscall.Close(im.fd) }

type mappedMemory struct{ buf []byte }

func (m *mappedMemory) Reallocate(size uint64) []byte {
	if size > uint64(len(m.buf)) {
		return nil
	}
	return m.buf[:size]
}

func (m *mappedMemory) Free() {
	if m.buf != nil {
		syscall.Munmap(m.buf)
		m.buf = nil
	}
}
