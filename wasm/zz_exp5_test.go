package wasm

import (
	"context"
	"runtime"
	"testing"
)

func TestExpRepeat(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ctx := context.Background()
	e := newEngine(t, func(c *Config) { c.PoolSize = 0 })
	for j := 0; j < 4; j++ {
	inst, _ := e.instantiate(ctx)
	mem := inst.mod.Memory()
	buf, _ := mem.Read(0, mem.Size())
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = buf[i] + 1
		buf[i] = buf[i] - 1
	}
	stack := make([]uint64, 4)
	for i := 0; i < 3; i++ {
		c0, f0 := threadCPU(), minflt()
		inst.result.CallWithStack(ctx, stack)
		c1, f1 := threadCPU(), minflt()
		stack[0] = 3
		inst.alloc.CallWithStack(ctx, stack)
		c2, f2 := threadCPU(), minflt()
		mem.Write(uint32(stack[0]), []byte("x{}"))
		stack[0], stack[1], stack[2], stack[3] = 1, 2, 64, 1<<20
		inst.render.CallWithStack(ctx, stack)
		c3, f3 := threadCPU(), minflt()
		t.Logf("result %v/%d alloc %v/%d render %v/%d", c1-c0, f1-f0, c2-c1, f2-f1, c3-c2, f3-f2)
	}
	inst.close()
	}
}
