//go:build linux && !race

package edge

// raceReleaseWrite and raceAcquireRead give the race detector a socket's
// happens-before in race builds (sock_race.go); here they are nothing.

func raceReleaseWrite(uintptr) {}

func raceAcquireRead(uintptr) {}
