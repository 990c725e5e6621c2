//go:build !(linux && cgo)

package malloc

// Tune does nothing without glibc and cgo.
func Tune() map[string]int { return nil }
