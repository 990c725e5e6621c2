package wasm

import (
	"context"
	"runtime"
	"testing"
	"time"
)

func BenchmarkExp(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ctx := context.Background()
	e := newEngine(b, func(c *Config) { c.PoolSize = 4 })
	for _, tc := range []struct{ name, tpl, vals string; check bool }{
		{"trivial", "x", "{}", false},
		{"values-only", "x", cardValues, false},
		{"check-card", cardTemplate, "", true},
		{"card", cardTemplate, cardValues, false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			tm := &timings{}
			for b.Loop() {
				b.StopTimer()
				for len(e.pool) < cap(e.pool) {
					time.Sleep(100 * time.Microsecond)
				}
				b.StartTimer()
				tm.measure(func() {
					if tc.check {
						e.Check(ctx, tc.tpl)
					} else {
						e.Render(ctx, tc.tpl, []byte(tc.vals))
					}
				})
			}
			tm.report(b)
		})
	}
}
