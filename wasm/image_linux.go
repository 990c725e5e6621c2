package wasm

import (
	"encoding/binary"
	"errors"
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
	pm   *pagemap // nil when /proc/self/pagemap cannot be read: no restore
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
	im := &image{fd: fd, size: len(snapshot)}
	if pm, err := openPagemap(); err == nil {
		im.pm = pm
	}
	return im, nil
}

// restore makes an instance's memory the image again (see
// pagemap.restore); it fails for a memory that is not a mapping of the
// image, or when the pagemap cannot be read.
func (im *image) restore(lm experimental.LinearMemory, snapshot, scratch []byte) (int, error) {
	m, ok := lm.(*mappedMemory)
	if !ok || im.pm == nil || m.buf == nil {
		return 0, errNoRestore
	}
	return im.pm.restore(m, snapshot, scratch)
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

func (im *image) close() error {
	err := syscall.Close(im.fd)
	if im.pm != nil {
		err = errors.Join(err, im.pm.close())
	}
	return err
}

type mappedMemory struct{ buf []byte }

// Bits of a /proc/self/pagemap entry (Documentation/admin-guide/mm/pagemap.rst).
const (
	pagemapPresent = 1 << 63
	pagemapSwapped = 1 << 62
	pagemapFile    = 1 << 61 // a page of the file (or shared anonymous)
)

// pagemap is /proc/self/pagemap, opened once by newResetter.
type pagemap struct{ f *os.File }

func openPagemap() (*pagemap, error) {
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return nil, err
	}
	return &pagemap{f: f}, nil
}

func (p *pagemap) close() error { return p.f.Close() }

// restore makes the first len(snapshot) bytes of m equal to snapshot
// again, copying back only the pages an evaluation wrote: those that
// are no longer the image's (copied on write, so anonymous, present or
// swapped out). A page still mapped from the image, or never touched,
// reads as the image, which nothing writes. It returns how many pages
// it copied. entries is scratch space.
func (p *pagemap) restore(m *mappedMemory, snapshot []byte, entries []byte) (int, error) {
	ps := os.Getpagesize()
	if len(snapshot) > len(m.buf) || len(snapshot)%ps != 0 {
		return 0, fmt.Errorf("snapshot of %d bytes, memory of %d", len(snapshot), len(m.buf))
	}
	pages := len(snapshot) / ps
	if len(entries) < 8*pages {
		return 0, fmt.Errorf("pagemap scratch too small")
	}
	entries = entries[:8*pages]
	off := int64(uintptr(unsafe.Pointer(&m.buf[0]))/uintptr(ps)) * 8
	if n, err := p.f.ReadAt(entries, off); err != nil || n != len(entries) {
		return 0, fmt.Errorf("read pagemap: %d bytes, %v", n, err)
	}
	copied := 0
	for i := range pages {
		e := binary.LittleEndian.Uint64(entries[8*i:])
		if e&pagemapSwapped != 0 || (e&pagemapPresent != 0 && e&pagemapFile == 0) {
			copy(m.buf[i*ps:(i+1)*ps], snapshot[i*ps:(i+1)*ps])
			copied++
		}
	}
	return copied, nil
}

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
