package main

import (
	"runtime"
	"testing"
)

func TestEdgeProcs(t *testing.T) {
	base := runtime.GOMAXPROCS(0)
	for _, c := range []struct {
		command, env string
		want         int
		set          bool
	}{
		{"serve", "", edgeProcsPerCPU * base, true},
		{"edge", "", edgeProcsPerCPU * base, true},
		{"edge", "3", 0, false}, // the operator's GOMAXPROCS stands
		{"origin", "", 0, false},
		{"admin", "", 0, false},
		{"version", "", 0, false},
	} {
		n, ok := edgeProcs(c.command, func(k string) string {
			if k == "GOMAXPROCS" {
				return c.env
			}
			return ""
		})
		if n != c.want || ok != c.set {
			t.Errorf("edgeProcs(%q, GOMAXPROCS=%q) = %d, %v; want %d, %v", c.command, c.env, n, ok, c.want, c.set)
		}
	}
}
