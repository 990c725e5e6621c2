//go:build linux && race

package edge

import "syscall"

// The race detector learns that data sent on a socket happens before its
// reading from syscall.Write and syscall.Read, which release and acquire
// one sync point for all descriptors (syscall's ioSync); raw system calls
// skip that, and without it a race build reports what a test did after an
// answer as racing with the handler that sent it. In race builds the raw
// socket makes a zero-length syscall.Write before each write and a
// zero-length syscall.Read after each read that returned data: no bytes,
// the same annotations. Other builds compile them to nothing
// (sock_norace.go).

func raceReleaseWrite(fd uintptr) { syscall.Write(int(fd), nil) }

func raceAcquireRead(fd uintptr) { syscall.Read(int(fd), nil) }
