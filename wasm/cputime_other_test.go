//go:build !linux

package wasm

import "time"

// threadCPU is not measured here.
func threadCPU() time.Duration { return 0 }
