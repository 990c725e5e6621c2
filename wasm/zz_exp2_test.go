package wasm

import (
	"context"
	"runtime"
	"syscall"
	"testing"
	"time"
)

func minflt() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(1 /*RUSAGE_THREAD*/, &ru)
	return ru.Minflt
}

func TestExpPhases(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ctx := context.Background()
	e := newEngine(t, func(c *Config) { c.PoolSize = 0 })
	for i := 0; i < 5; i++ {
		c0, f0 := threadCPU(), minflt()
		inst, _ := e.instantiate(ctx)
		c1, f1 := threadCPU(), minflt()
		stack := make([]uint64, 4)
		stack[0] = 3
		inst.alloc.CallWithStack(ctx, stack)
		c2, f2 := threadCPU(), minflt()
		inst.mod.Memory().Write(uint32(stack[0]), []byte("x{}"))
		stack[0], stack[1], stack[2], stack[3] = 1, 2, 64, 1<<20
		inst.render.CallWithStack(ctx, stack)
		c3, f3 := threadCPU(), minflt()
		inst.result.CallWithStack(ctx, stack)
		c4, f4 := threadCPU(), minflt()
		inst.close()
		c5, f5 := threadCPU(), minflt()
		t.Logf("inst %v/%d alloc %v/%d render %v/%d result %v/%d close %v/%d", c1-c0, f1-f0, c2-c1, f2-f1, c3-c2, f3-f2, c4-c3, f4-f3, c5-c4, f5-f4)
		_ = time.Now
	}
}

func TestExpImage(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.PoolSize = 0 })
	t.Logf("image %d bytes, memPages %d, globals %d", e.image.size, e.memPages, len(e.globals))
}
