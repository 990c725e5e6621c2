//go:build linux && (amd64 || arm64)

package cache

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestPreadCachedAndCold reads a body file as a hit does, from the page
// cache (the raw preadv2 with RWF_NOWAIT) and after its pages were dropped
// (the kernel refuses to wait, and the ordinary pread reads the disk), and
// with the flag taken as refused: the same bytes every time.
func TestPreadCachedAndCold(t *testing.T) {
	want := make([]byte, 256<<10)
	rand.Read(want)
	fd := writeSynced(t, want)

	read := func(what string) {
		t.Helper()
		got := make([]byte, len(want))
		n, err := osFD(fd).ReadAt(got, 0)
		if err != nil || n != len(want) || !bytes.Equal(got, want) {
			t.Fatalf("%s: read %d bytes (%v), want the file's %d", what, n, err, len(want))
		}
		part := make([]byte, 1000)
		if n, err := osFD(fd).ReadAt(part, 100_000); err != nil || !bytes.Equal(part[:n], want[100_000:101_000]) {
			t.Fatalf("%s: read at 100000: %d bytes (%v), not the file's", what, n, err)
		}
	}
	read("cached")

	// Dropped from the page cache, a read without waiting is refused...
	if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(want))
	iov := syscall.Iovec{Base: &buf[0]}
	iov.SetLen(len(buf))
	if _, _, e := syscall.RawSyscall6(unix.SYS_PREADV2, uintptr(fd), uintptr(unsafe.Pointer(&iov)), 1, 0, 0, unix.RWF_NOWAIT); e != syscall.EAGAIN {
		t.Fatalf("preadv2 RWF_NOWAIT of a file out of the page cache: errno %v, want EAGAIN (a temporary directory on tmpfs keeps its pages)", e)
	}
	// ...and pread reads it with the ordinary call.
	if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	read("cold")
	if noWaitRefused.Load() {
		t.Fatal("EAGAIN was taken for a refusal of RWF_NOWAIT")
	}

	noWaitRefused.Store(true)
	t.Cleanup(func() { noWaitRefused.Store(false) })
	read("ordinary")
}

// TestOpenRead opens a body file by its name as a hit does, from the
// kernel's name cache (openat2 with RESOLVE_CACHED) and with the flag taken
// as refused; a missing file is fs.ErrNotExist either way.
func TestOpenRead(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "body")
	if err := os.WriteFile(name, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, refused := range []bool{false, true} {
		cachedOpenRefused.Store(refused)
		fd, err := openRead([]byte(name))
		if err != nil {
			t.Fatalf("refused %v: %v", refused, err)
		}
		got := make([]byte, 5)
		n, err := osFD(fd).ReadAt(got, 0)
		size, serr := fileSize(fd)
		if cerr := osFD(fd).Close(); cerr != nil {
			t.Fatal(cerr)
		}
		if err != nil || string(got[:n]) != "hello" || serr != nil || size != 5 {
			t.Fatalf("refused %v: read %q (%v), size %d (%v)", refused, got[:n], err, size, serr)
		}
		if _, err := openRead([]byte(filepath.Join(dir, "missing"))); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("refused %v: opening a missing file: %v, want fs.ErrNotExist", refused, err)
		}
		if cachedOpenRefused.Load() != refused {
			t.Fatalf("refused %v: the refusal flag changed", refused)
		}
	}
	cachedOpenRefused.Store(false)
	// A closed descriptor reads nothing.
	fd, err := openRead([]byte(name))
	if err != nil {
		t.Fatal(err)
	}
	if err := closeFD(fd); err != nil {
		t.Fatal(err)
	}
	if err := closeFD(fd); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("closing twice: %v, want EBADF", err)
	}
}

// writeSynced writes b to a new file, synced so that its pages can be
// dropped, and returns it open for reading.
func writeSynced(t *testing.T, b []byte) int {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "body"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err = f.Write(b); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	fd, err := openRead([]byte(f.Name()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeFD(fd) })
	return fd
}

// TestCached asks the page cache about a body file's pages as SendTo does
// before choosing a raw sendfile: all of them after the write, none once
// dropped, and only those read back since.
func TestCached(t *testing.T) {
	body := make([]byte, 64<<10)
	rand.Read(body)
	fd := writeSynced(t, body)
	n := int64(len(body))
	if !cached(fd, 0, n) {
		t.Fatal("a file just written is not all in the page cache")
	}
	if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	if cached(fd, 0, n) || cached(fd, 5000, 10) {
		t.Fatal("a file whose pages were dropped is said to be in the page cache")
	}
	// Read back its second page only (the kernel may read ahead of it,
	// never behind).
	page := make([]byte, pageSize)
	if _, err := syscall.Pread(fd, page, pageSize); err != nil {
		t.Fatal(err)
	}
	if !cached(fd, pageSize, pageSize) || !cached(fd, pageSize+100, 10) {
		t.Fatal("the page just read is not in the page cache")
	}
	if cached(fd, 0, n) || cached(fd, pageSize-1, 2) {
		t.Fatal("a range starting on a page not read back is said to be in the page cache")
	}
	if cachestatRefused.Load() {
		t.Fatal("cachestat was taken as refused")
	}
}

// TestSendToCold sends an L2 body whose pages were dropped from the page
// cache: cached says so, the ordinary sendfile reads them from the disk,
// and the same bytes arrive; afterwards they are cached again.
func TestSendToCold(t *testing.T) {
	c := openCache(t, testConfig(t))
	large := newEntry("o", "big", "", 200<<10, 1)
	mustPut(t, c, "large", large)
	c.dropFromMemory("large")
	got, lvl, ok := c.Get([]byte("large"))
	if !ok || lvl != L2 || !got.OnDisk() {
		t.Fatalf("L2 hit on a large body = %v %v, on disk %v", lvl, ok, got.OnDisk())
	}
	f, err := os.Open(c.bodyPath(t, "large"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd, n := int(f.Fd()), int64(len(large.Body))
	if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	if cached(fd, 0, n) {
		t.Fatal("the body's pages are still said to be cached")
	}
	if sent := sendOverTCP(t, c, got, 0, n); !bytes.Equal(sent, large.Body) {
		t.Fatalf("%d bytes arrived, want the body's %d", len(sent), n)
	}
	if !cached(fd, 0, n) {
		t.Fatal("after sendfile read them, the body's pages are not cached")
	}
	if sent := sendOverTCP(t, c, got, 1, n-1); !bytes.Equal(sent, large.Body[1:]) {
		t.Fatalf("%d bytes arrived, want %d", len(sent), n-1)
	}
}

// TestAppendPath: the name a hit builds on its stack is path's.
func TestAppendPath(t *testing.T) {
	c := openCache(t, testConfig(t))
	for _, n := range []uint64{1, 15, 16, 255, 256, 0x1234, 0xdeadbeef, 1<<64 - 1} {
		if got, want := string(c.bodies.appendPath([]byte("x"), n)), "x"+c.bodies.path(n); got != want {
			t.Errorf("appendPath(%#x) = %q, want %q", n, got, want)
		}
	}
}
