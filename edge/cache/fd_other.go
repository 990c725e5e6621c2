//go:build !(linux && (amd64 || arm64))

package cache

import "syscall"

// Elsewhere, body files are read with the ordinary system calls (see
// fd_linux.go).

func pread(fd int, p []byte, off int64) (int, error) { return syscall.Pread(fd, p, off) }

func openRead(name []byte) (int, error) {
	return syscall.Open(string(name), syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
}

func fileSize(fd int) (int64, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return 0, err
	}
	return st.Size, nil
}

func closeFD(fd int) error { return syscall.Close(fd) }

func cached(fd int, off, n int64) bool { return false }

func sendfile(out, in int, off *int64, n int, raw bool) (int, error) {
	return syscall.Sendfile(out, in, off, n)
}
