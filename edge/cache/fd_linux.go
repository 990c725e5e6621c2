//go:build linux && (amd64 || arm64)

package cache

import (
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A hit on a body on disk opens, checks and reads its file on the
// request's path. Through syscall.Open, Fstat and Pread, Go marks the
// processor as in a system call for each, and one that outlasts sysmon's
// 20 µs check (a thread the kernel descheduled on a busy host) hands the
// processor to another thread and keeps sysmon waking every 20 µs: 6.5 %
// of the edge's CPU under zipf-100k went to sysmon alone. These calls are
// raw (the processor stays with the goroutine) when the kernel can answer
// from its caches, which it says before waiting: preadv2 with RWF_NOWAIT
// fails with EAGAIN rather than read the disk, openat2 with RESOLVE_CACHED
// rather than look a name up on it. Then, and on a kernel or file system
// that refuses the flag, the ordinary call runs, which may wait. sendfile
// has no such flag: it is raw when cachestat finds every page it will
// send in the page cache. fstat of
// an open file and close never wait for the disk, except the last close of
// a file a purge unlinked meanwhile, which frees its blocks: rare, and
// bounded as nginx's every call is.

// resolveCached is RESOLVE_CACHED (Linux 5.12), which x/sys does not
// define for Linux.
const resolveCached = 0x20

var (
	// noWaitRefused and cachedOpenRefused are set when the kernel or the
	// file system refuses RWF_NOWAIT or RESOLVE_CACHED; the ordinary calls
	// run from then on.
	noWaitRefused     atomic.Bool
	cachedOpenRefused atomic.Bool
	// cachestatRefused is set when the kernel has no cachestat (before
	// 6.5): sendfile is then always the ordinary call.
	cachestatRefused atomic.Bool
)

// atFDCWD is AT_FDCWD as a system call argument.
var atFDCWD = unix.AT_FDCWD

// settle judges the outcome of a raw call that asked the kernel not to
// wait: done, with its result or its error, or not done when the kernel
// would have waited or refuses the flag (refused is then set, and the
// ordinary call runs from then on).
func settle(r uintptr, e syscall.Errno, refused *atomic.Bool) (int, bool, error) {
	switch e {
	case 0:
		return int(r), true, nil
	case syscall.EAGAIN, syscall.EINTR: // not all cached: the ordinary call waits for it
		return -1, false, nil
	case syscall.EOPNOTSUPP, syscall.ENOSYS, syscall.EINVAL, syscall.E2BIG:
		refused.Store(true)
		return -1, false, nil
	}
	return -1, true, e
}

// pread reads len(p) bytes or fewer at off, from the page cache without
// leaving the processor when it holds them.
func pread(fd int, p []byte, off int64) (int, error) {
	if len(p) > 0 && !noWaitRefused.Load() {
		iov := syscall.Iovec{Base: &p[0]}
		iov.SetLen(len(p))
		r, _, e := syscall.RawSyscall6(unix.SYS_PREADV2, uintptr(fd), uintptr(unsafe.Pointer(&iov)), 1,
			uintptr(off), 0, unix.RWF_NOWAIT)
		if n, done, err := settle(r, e, &noWaitRefused); done {
			return n, err
		}
	}
	return syscall.Pread(fd, p, off)
}

// openRead opens name for reading, without leaving the processor when the
// kernel resolves it from its caches.
func openRead(name []byte) (int, error) {
	var path [512]byte
	if len(name) < len(path) && !cachedOpenRefused.Load() {
		copy(path[:], name) // and NUL-terminated
		how := unix.OpenHow{Flags: syscall.O_RDONLY | syscall.O_CLOEXEC, Resolve: resolveCached}
		r, _, e := syscall.RawSyscall6(unix.SYS_OPENAT2, uintptr(atFDCWD), uintptr(unsafe.Pointer(&path[0])),
			uintptr(unsafe.Pointer(&how)), unsafe.Sizeof(how), 0, 0)
		if fd, done, err := settle(r, e, &cachedOpenRefused); done {
			return fd, err
		}
	}
	return syscall.Open(string(name), syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
}

// pageSize is the page cache's unit, which cachestat counts.
var pageSize = int64(unix.Getpagesize())

// cached reports whether the page cache holds all of fd's n bytes from
// off (cachestat, Linux 6.5), so that sendfile from there will not wait
// for the disk; false when the kernel cannot say.
func cached(fd int, off, n int64) bool {
	if n <= 0 || cachestatRefused.Load() {
		return false
	}
	r := unix.CachestatRange{Off: uint64(off), Len: uint64(n)}
	var st unix.Cachestat_t
	rc, _, e := syscall.RawSyscall6(unix.SYS_CACHESTAT, uintptr(fd), uintptr(unsafe.Pointer(&r)),
		uintptr(unsafe.Pointer(&st)), 0, 0, 0)
	pages := (off+n-1)/pageSize - off/pageSize + 1
	_, done, err := settle(rc, e, &cachestatRefused)
	return done && err == nil && st.Cache >= uint64(pages)
}

// sendfile sends up to n bytes of in from *off to the socket out, raw
// when cached said the page cache holds them.
func sendfile(out, in int, off *int64, n int, raw bool) (int, error) {
	if !raw {
		return syscall.Sendfile(out, in, off, n)
	}
	w, _, e := syscall.RawSyscall6(unix.SYS_SENDFILE, uintptr(out), uintptr(in), uintptr(unsafe.Pointer(off)), uintptr(n), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(w), nil
}

// fileSize is the size of the open file fd.
func fileSize(fd int) (int64, error) {
	var st unix.Stat_t
	if _, _, e := syscall.RawSyscall(unix.SYS_FSTAT, uintptr(fd), uintptr(unsafe.Pointer(&st)), 0); e != 0 {
		return 0, e
	}
	return st.Size, nil
}

// closeFD closes fd.
func closeFD(fd int) error {
	if _, _, e := syscall.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0); e != 0 {
		return e
	}
	return nil
}
