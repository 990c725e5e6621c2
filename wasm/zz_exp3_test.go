package wasm

import (
	"context"
	"runtime"
	"testing"
)

func TestExpPretouch(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ctx := context.Background()
	e := newEngine(t, func(c *Config) { c.PoolSize = 0 })
	for _, tc := range []struct{ tpl, vals string }{{"x", "{}"}, {"x", "{}"}, {"x", "{}"}, {cardTemplate, cardValues}, {cardTemplate, cardValues}, {cardTemplate, cardValues}} {
		inst, _ := e.instantiate(ctx)
		mem := inst.mod.Memory()
		buf, _ := mem.Read(0, mem.Size())
		c0, f0 := threadCPU(), minflt()
		for i := 0; i < len(buf); i += 4096 {
			buf[i] = buf[i] + 1
			buf[i] = buf[i] - 1
		}
		c1, f1 := threadCPU(), minflt()
		stack := make([]uint64, 4)
		stack[0] = uint64(len(tc.tpl) + len(tc.vals))
		inst.alloc.CallWithStack(ctx, stack)
		c2, f2 := threadCPU(), minflt()
		mem.Write(uint32(stack[0]), []byte(tc.tpl+tc.vals))
		stack[0], stack[1], stack[2], stack[3] = uint64(len(tc.tpl)), uint64(len(tc.vals)), 64, 1<<20
		inst.render.CallWithStack(ctx, stack)
		c3, f3 := threadCPU(), minflt()
		inst.result.CallWithStack(ctx, stack)
		c4, f4 := threadCPU(), minflt()
		inst.close()
		c5, f5 := threadCPU(), minflt()
		t.Logf("touch %v/%d alloc %v/%d render %v/%d result %v/%d close %v/%d", c1-c0, f1-f0, c2-c1, f2-f1, c3-c2, f3-f2, c4-c3, f4-f3, c5-c4, f5-f4)
	}
}
