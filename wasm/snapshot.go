package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/pictorhq/pictor/wasm/internal/wasmbin"
)

// guestImage is a compiled module and the state its instances start
// from: its memory right after initialization (image, and snapMem, its
// bytes, copied back by reset) and its globals.
type guestImage struct {
	compiled wazero.CompiledModule
	prepared *wasmbin.Module
	image    *image
	snapMem  []byte
	memPages uint32
	globals  []uint64
}

// moduleInstance is an instance of a guestImage.
type moduleInstance struct {
	mod     api.Module
	globals []api.MutableGlobal // by index; nil for immutable ones
	memory  experimental.LinearMemory
}

// snapshot initializes one instance of each module the ordinary way
// (data segments, then, for the Go guest, its runtime's _initialize)
// and keeps their memories and globals, and the guest's clocks: every
// later instance starts from exactly that state instead of paying for
// the runtime's start-up again.
func (e *Engine) snapshot(ctx context.Context) error {
	clk := &clocks{}
	mod, err := e.coldInstance(ctx, e.guest.prepared, clk)
	if err != nil {
		return err
	}
	defer mod.Close(ctx)
	if err := e.guest.snapshot(mod, e.cfg.MemoryLimitBytes); err != nil {
		return err
	}
	e.clocks.wall.Store(clk.wall.Load())
	e.clocks.mono.Store(clk.mono.Load())

	ev, err := e.rt.InstantiateModule(ctx, e.evaluator.compiled, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		return fmt.Errorf("%w: instantiate evaluator: %w", ErrGuest, err)
	}
	defer ev.Close(ctx)
	if err := writeSegments(ev, e.evaluator.prepared); err != nil {
		return err
	}
	return e.evaluator.snapshot(ev, e.cfg.MemoryLimitBytes)
}

// snapshot keeps an initialized instance's memory and globals.
func (g *guestImage) snapshot(mod api.Module, limit uint64) error {
	mem := mod.Memory()
	snap, ok := mem.Read(0, mem.Size())
	if !ok {
		return fmt.Errorf("%w: read guest memory", ErrGuest)
	}
	if uint64(len(snap)) > limit {
		return fmt.Errorf("wasm config: MemoryLimitBytes: %d is below the guest's initial memory of %d bytes", limit, len(snap))
	}
	var err error
	if g.image, err = newImage(snap); err != nil {
		return fmt.Errorf("%w: memory image: %w", ErrGuest, err)
	}
	g.snapMem = bytes.Clone(snap)
	g.memPages = mem.Size() / pageSize
	g.globals = make([]uint64, g.prepared.Globals)
	for i := range g.globals {
		gl := mod.ExportedGlobal(wasmbin.GlobalExportPrefix + strconv.Itoa(i))
		if gl == nil {
			return fmt.Errorf("%w: global %d not exported", ErrGuest, i)
		}
		g.globals[i] = gl.Get()
	}
	return nil
}

// writeSegments writes the data segments Prepare took out of a module
// into an instance's memory.
func writeSegments(mod api.Module, prepared *wasmbin.Module) error {
	mem := mod.Memory()
	if mem == nil {
		return fmt.Errorf("%w: a module has no memory", ErrGuest)
	}
	for _, seg := range prepared.Segments {
		if !mem.Write(seg.Offset, seg.Data) {
			return fmt.Errorf("%w: data segment at %d out of range", ErrGuest, seg.Offset)
		}
	}
	return nil
}

// coldInstance is an instance started the ordinary way: the data
// segments written to its memory, then the Go runtime's _initialize.
// It is what every instance would cost without the snapshot.
func (e *Engine) coldInstance(ctx context.Context, prepared *wasmbin.Module, clk *clocks) (api.Module, error) {
	stderr := &boundedBuffer{max: 4 << 10}
	mod, err := e.rt.InstantiateModule(ctx, e.guest.compiled, e.instanceConfig(stderr, clk))
	if err != nil {
		return nil, fmt.Errorf("%w: instantiate guest: %w", ErrGuest, err)
	}
	if err := writeSegments(mod, prepared); err != nil {
		mod.Close(ctx)
		return nil, err
	}
	initialize := mod.ExportedFunction("_initialize")
	if initialize == nil {
		mod.Close(ctx)
		return nil, fmt.Errorf("%w: the guest is not a reactor (no _initialize)", ErrGuest)
	}
	if _, err := initialize.Call(ctx); err != nil {
		mod.Close(ctx)
		return nil, fmt.Errorf("%w: initialize guest: %w: %s", ErrGuest, err, stderr.String())
	}
	return mod, nil
}

// clocks are an instance's deterministic clocks: they reveal nothing of
// the host, but advance (the Go runtime needs them to) by a microsecond
// a reading, and by the time asked on a sleep.
type clocks struct{ wall, mono atomic.Int64 }

// instanceConfig: no arguments, environment, directories or stdin;
// stdout dropped, stderr kept for classify; clocks and random source
// deterministic. No start function: instances start from the snapshot.
func (e *Engine) instanceConfig(stderr io.Writer, clk *clocks) wazero.ModuleConfig {
	return wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions().
		WithStdout(io.Discard).
		WithStderr(stderr).
		WithRandSource(zeroReader{}).
		WithWalltime(func() (int64, int32) {
			t := clk.wall.Add(int64(time.Microsecond))
			return t / 1e9, int32(t % 1e9)
		}, 1).
		WithNanotime(func() int64 { return clk.mono.Add(int64(time.Microsecond)) }, 1).
		// A sleep advances the clocks instead of waiting: the runtime's
		// idle waits for its timers end at once, deterministically.
		WithNanosleep(func(ns int64) {
			clk.mono.Add(ns)
			clk.wall.Add(ns)
		}).
		WithOsyield(func() {})
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// boundedBuffer keeps the first max bytes written to it.
type boundedBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n := b.max - len(b.buf); n > 0 {
		b.buf = append(b.buf, p[:min(n, len(p))]...)
	}
	return len(p), nil
}

func (b *boundedBuffer) reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = b.buf[:0]
}

func (b *boundedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// instantiate makes an instance of g in its snapshot's state.
func (g *guestImage) instantiate(ctx context.Context, rt wazero.Runtime, cfg wazero.ModuleConfig) (moduleInstance, error) {
	var memory experimental.LinearMemory
	alloc := experimental.MemoryAllocatorFunc(func(cap, max uint64) experimental.LinearMemory {
		memory = g.image.Allocate(cap, max)
		return memory
	})
	mod, err := rt.InstantiateModule(experimental.WithMemoryAllocator(ctx, alloc), g.compiled, cfg)
	if err != nil {
		return moduleInstance{}, fmt.Errorf("%w: instantiate guest: %w", ErrGuest, err)
	}
	mem := mod.Memory()
	if size := mem.Size() / pageSize; size < g.memPages {
		if _, ok := mem.Grow(g.memPages - size); !ok {
			mod.Close(ctx)
			return moduleInstance{}, fmt.Errorf("%w: grow memory to the snapshot's", ErrGuest)
		}
	}
	m := moduleInstance{mod: mod, memory: memory, globals: make([]api.MutableGlobal, len(g.globals))}
	for i, v := range g.globals {
		if gl, ok := mod.ExportedGlobal(wasmbin.GlobalExportPrefix + strconv.Itoa(i)).(api.MutableGlobal); ok {
			gl.Set(v)
			m.globals[i] = gl
		}
	}
	return m, nil
}

// resetScratch is the space reset needs to read the pagemap.
func (e *Engine) resetScratch() []byte {
	return make([]byte, 8*max(len(e.guest.snapMem), len(e.evaluator.snapMem))/pageSizeOS)
}

// canReset checks that reset finds, and undoes, a write to an
// instance's memory (it relies on the kernel's pagemap).
func (g *guestImage) canReset(m *moduleInstance, scratch []byte) bool {
	if n, err := g.image.restore(m.memory, g.snapMem, scratch); err != nil || n != 0 {
		return false
	}
	mem := m.mod.Memory()
	at := mem.Size() / 2
	b, _ := mem.ReadByte(at)
	if !mem.WriteByte(at, ^b) {
		return false
	}
	n, err := g.image.restore(m.memory, g.snapMem, scratch)
	got, _ := mem.ReadByte(at)
	return err == nil && n == 1 && got == b
}

// errGrown: an instance whose memory grew cannot be reset (a memory
// does not shrink), only closed.
var errGrown = errors.New("the instance's memory grew")

// reset puts an instance that finished an evaluation back in the
// snapshot's state: the pages of memory it wrote copied back from the
// image (all others still read as the image), its globals and clocks
// the snapshot's, its stderr empty. It fails, and the instance must be
// closed, when the instance was closed (a trap, a deadline) or its
// memory grew. scratch is resetScratch's.
func (e *Engine) reset(inst *instance, scratch []byte) error {
	if err := e.evaluator.reset(&inst.ev, scratch); err != nil {
		return err
	}
	if g := inst.g; g != nil {
		if err := e.guest.reset(&g.moduleInstance, scratch); err != nil {
			return err
		}
		g.clk.wall.Store(e.clocks.wall.Load())
		g.clk.mono.Store(e.clocks.mono.Load())
		g.stderr.reset()
	}
	inst.resets++
	return nil
}

// reset puts one module's instance back in the snapshot's state.
func (g *guestImage) reset(m *moduleInstance, scratch []byte) error {
	if m.mod.IsClosed() {
		return sys.NewExitError(0)
	}
	if m.mod.Memory().Size() != g.memPages*pageSize {
		return errGrown
	}
	if _, err := g.image.restore(m.memory, g.snapMem, scratch); err != nil {
		return err
	}
	for i, gl := range m.globals {
		if gl != nil {
			gl.Set(g.globals[i])
		}
	}
	return nil
}

func (g *guestImage) close() {
	if g.image != nil {
		g.image.close()
	}
}
