package wasm

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/pictorhq/pictor/wasm/internal/abi"
	"github.com/pictorhq/pictor/wasm/internal/hbs"
	"github.com/pictorhq/pictor/wasm/internal/wasmbin"
)

// guestWasm is wasm/guest built by build.sh; TestGuestUpToDate rebuilds
// it and fails if this copy is stale.
//
//go:embed guest.wasm
var guestWasm []byte

// evaluatorWasm is wasm/evaluator built by its build.sh;
// TestEvaluatorUpToDate holds it to the source.
//
//go:embed evaluator.wasm
var evaluatorWasm []byte

// Engine evaluates Handlebars templates in the WebAssembly sandbox. The
// guest is compiled once; every evaluation runs in an instance of its
// own, fresh from the snapshot or reset to it (its memory, globals and
// clocks made the snapshot's again, Config.ResetInstances), so nothing
// one evaluation leaves in memory is seen by the next. Instances are
// made and reset ahead of time by a background goroutine
// (Config.PoolSize) because the Go runtime's start-up in the guest
// costs far more than an evaluation. Each template is parsed once: the
// guest's compiled program is cached (Config.ProgramCacheBytes) and
// later evaluations hand it, with the values, to the evaluator
// (wasm/evaluator, a second module in every instance, in C): the same
// runtime without the Go guest's cost of an exit from native code at
// every branch (see wasm/README.md). What the evaluator does not cover,
// errors included, it hands back, and the Go guest evaluates the
// program instead: the result is the Go guest's either way.
//
// An Engine is safe for concurrent use.
type Engine struct {
	cfg   Config
	rt    wazero.Runtime
	cache wazero.CompilationCache

	// The Go guest and the evaluator, and the state their instances
	// start from (see snapshot); the guest's clocks too.
	guest, evaluator guestImage
	clocks           clocks
	// The modules' input buffers (abi.ExportInput), the same in every
	// instance.
	inAddr, inCap     uint32
	evInAddr, evInCap uint32

	// Renders the evaluator finished, those it handed back, and those
	// the Go guest made (handed back or of a template not cached).
	fast, fallbacks, goRenders atomic.Uint64
	// Instances of the Go guest made (goGuest).
	goInstances atomic.Uint64

	programs *sizedLRU[[]byte]
	outlines *sizedLRU[*Outline]

	// pool holds ready instances; dirty the used ones waiting for the
	// filler to reset them; busy counts the instances evaluating. The
	// filler makes new instances while the three add up to less than
	// PoolSize, woken by wake when an instance is dropped.
	pool  chan *instance
	dirty chan *instance
	// pooled is signalled (without blocking) after the filler adds an
	// instance to pool: a benchmark waits on it for a full pool.
	pooled chan struct{}
	busy   atomic.Int32
	wake   chan struct{}
	reuse  bool // instances are reset, not closed, after an evaluation
	stop   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once

	// mu is held for reading by each evaluation and for writing by
	// Close, which so waits for those under way.
	mu     sync.RWMutex
	closed bool
}

// New compiles the guest (or loads it from Config.CompilationCacheDir)
// and starts filling the pool of instances.
func New(ctx context.Context, cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("wasm config: %w", err)
	}
	e := &Engine{
		cfg:      cfg,
		stop:     make(chan struct{}),
		pool:     make(chan *instance, cfg.PoolSize),
		dirty:    make(chan *instance, cfg.PoolSize),
		pooled:   make(chan struct{}, 1),
		wake:     make(chan struct{}, 1),
		programs: newProgramCache(cfg.ProgramCacheBytes),
		outlines: newOutlineCache(),
	}
	var err error
	if cfg.CompilationCacheDir != "" {
		e.cache, err = wazero.NewCompilationCacheWithDir(cfg.CompilationCacheDir)
		if err != nil {
			return nil, fmt.Errorf("wasm compilation cache %s: %w", cfg.CompilationCacheDir, err)
		}
	} else {
		e.cache = wazero.NewCompilationCache()
	}
	e.rt = wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().
		WithCompilationCache(e.cache).
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(uint32(cfg.MemoryLimitBytes/pageSize)))
	if err := e.start(ctx); err != nil {
		e.rt.Close(ctx)
		e.cache.Close(ctx)
		e.guest.close()
		e.evaluator.close()
		return nil, err
	}
	if cfg.PoolSize > 0 {
		e.wg.Add(1)
		go e.fill()
	}
	return e, nil
}

func (e *Engine) start(ctx context.Context) error {
	// WASI is what a Go wasip1 program imports. The guest gets no
	// directory, no environment, no arguments, no stdin, and the clocks
	// and random source of instanceConfig.
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, e.rt); err != nil {
		return fmt.Errorf("wasm instantiate wasi: %w", err)
	}
	for _, g := range []struct {
		name string
		bin  []byte
		img  *guestImage
	}{{"guest", guestWasm, &e.guest}, {"evaluator", evaluatorWasm, &e.evaluator}} {
		mod, err := wasmbin.Prepare(g.bin)
		if err != nil {
			return fmt.Errorf("%w: prepare %s: %w", ErrGuest, g.name, err)
		}
		compiled, err := e.rt.CompileModule(ctx, mod.Binary)
		if err != nil {
			return fmt.Errorf("wasm compile %s: %w", g.name, err)
		}
		g.img.compiled, g.img.prepared = compiled, mod
	}
	if err := e.snapshot(ctx); err != nil {
		return err
	}
	// Instantiate one now, so that a broken snapshot fails New, and
	// see whether its memories can be reset in place.
	inst, err := e.instantiate(ctx)
	if err != nil {
		return err
	}
	defer inst.close()
	g, err := e.goGuest(ctx, inst)
	if err != nil {
		return err
	}
	scratch := e.resetScratch()
	e.reuse = e.cfg.ResetInstances && e.cfg.PoolSize > 0 &&
		e.guest.canReset(&g.moduleInstance, scratch) && e.evaluator.canReset(&inst.ev, scratch)
	if e.inAddr, e.inCap, err = inputBuffer(ctx, g.mod); err != nil {
		return err
	}
	e.evInAddr, e.evInCap, err = inputBuffer(ctx, inst.ev.mod)
	return err
}

// inputBuffer asks a module for its input buffer (abi.ExportInput).
func inputBuffer(ctx context.Context, mod api.Module) (addr, size uint32, err error) {
	input := mod.ExportedFunction(abi.ExportInput)
	if input == nil {
		return 0, 0, fmt.Errorf("%w: a module lacks %s", ErrGuest, abi.ExportInput)
	}
	res, err := input.Call(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %s: %w", ErrGuest, abi.ExportInput, err)
	}
	return uint32(res[0] >> 32), uint32(res[0]), nil
}

// Check parses template in the sandbox: nil, a *SyntaxError,
// ErrTooDeep or ErrTemplateTooLarge. A template whose program is cached
// parsed before, and is not parsed again.
func (e *Engine) Check(ctx context.Context, template string) error {
	if len(template) > e.cfg.MaxTemplateBytes {
		return fmt.Errorf("%w: %d bytes, more than %d", ErrTemplateTooLarge, len(template), e.cfg.MaxTemplateBytes)
	}
	_, err := e.eval(ctx, template, nil, true)
	return err
}

// Render renders template with values, a JSON object, in the sandbox.
// Empty values are the empty object.
func (e *Engine) Render(ctx context.Context, template string, values []byte) (string, error) {
	if len(template) > e.cfg.MaxTemplateBytes {
		return "", fmt.Errorf("%w: %d bytes, more than %d", ErrTemplateTooLarge, len(template), e.cfg.MaxTemplateBytes)
	}
	if len(values) > e.cfg.MaxValuesBytes {
		return "", fmt.Errorf("%w: %d bytes, more than %d", ErrValuesTooLarge, len(values), e.cfg.MaxValuesBytes)
	}
	return e.eval(ctx, template, values, false)
}

// errEvalTimeout is the cause of the evaluation's own deadline, told
// apart from the caller's.
var errEvalTimeout = errors.New("evaluation deadline")

// errBadProgram: the guest rejected a cached program (abi.StatusProgram).
var errBadProgram = errors.New("cached program rejected")

func (e *Engine) eval(parent context.Context, template string, values []byte, checkOnly bool) (string, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return "", ErrClosed
	}
	// The values are decoded here, natively (linear in their size,
	// bounded by MaxValuesBytes and MaxDepth), and handed to the guest
	// in binary: scanning JSON text a byte at a time is what costs most
	// in the guest. A template that does not parse is reported before
	// values that do not decode, as the guest does: with bad values,
	// the template is only checked.
	var flags uint32
	var verr error
	if !checkOnly {
		v, err := hbs.ParseValues(values, e.cfg.MaxDepth)
		if err != nil {
			verr = valuesError(err)
			checkOnly, values = true, nil
		} else {
			values = hbs.EncodeValues(make([]byte, 0, len(values)+16), v)
			flags |= abi.FlagBinaryValues
		}
	}
	out, err := e.evalTemplate(parent, template, values, checkOnly, flags)
	if err == nil && verr != nil {
		return "", verr
	}
	return out, err
}

func valuesError(err error) error {
	if errors.Is(err, hbs.ErrTooDeep) {
		return fmt.Errorf("%w: %s", ErrTooDeep, err)
	}
	return fmt.Errorf("%w: %s", ErrValues, err)
}

// evalTemplate evaluates the template's cached program when there is
// one, the template otherwise (and caches its program).
func (e *Engine) evalTemplate(parent context.Context, template string, values []byte, checkOnly bool, flags uint32) (string, error) {
	if !checkOnly {
		e.goRenders.Add(1) // unless the evaluator renders it below
	}
	if e.cfg.ProgramCacheBytes == 0 {
		out, _, err := e.run(parent, template, values, checkOnly, flags)
		return out, err
	}
	key := sha256.Sum256(unsafe.Slice(unsafe.StringData(template), len(template)))
	if prog, ok := e.programs.get(key); ok {
		if checkOnly {
			return "", nil // it parsed when it was cached
		}
		out, err := e.evaluate(parent, prog, values)
		if !errors.Is(err, errFallback) {
			e.goRenders.Add(^uint64(0))
			e.fast.Add(1)
			return out, err
		}
		e.fallbacks.Add(1)
		out, _, err = e.run(parent, unsafe.String(unsafe.SliceData(prog), len(prog)), values, false, flags|abi.FlagProgram)
		if !errors.Is(err, errBadProgram) {
			return out, err
		}
		// Never so unless the cache was corrupted: parse it again.
		e.programs.remove(key)
		slog.ErrorContext(parent, "wasm cached program rejected", "err", err)
	}
	out, prog, err := e.run(parent, template, values, checkOnly, flags|abi.FlagEmitProgram)
	if prog != nil {
		e.programs.add(key, prog)
	}
	return out, err
}

// errFallback: the evaluator handed the evaluation back.
var errFallback = errors.New("evaluator fell back")

// The evaluator's statuses (wasm/evaluator/eval.c).
const (
	evalOK       = 0
	evalFallback = 1
)

// evaluate renders a cached program with binary values in the
// evaluator: errFallback when it hands the evaluation back (an error,
// a case it does not cover, a trap), which the Go guest then makes.
// An evaluation that passed its deadline is ErrTimeout here, not given
// a second one.
func (e *Engine) evaluate(parent context.Context, prog, values []byte) (string, error) {
	inst, err := e.acquire(parent)
	if err != nil {
		return "", err
	}
	reusable := false
	defer func() { e.release(inst, reusable) }()
	ctx, cancel := context.WithTimeoutCause(parent, e.cfg.Timeout, errEvalTimeout)
	defer cancel()

	stack := inst.stack
	addr := e.evInAddr
	if n := len(prog) + len(values); n > int(e.evInCap) {
		stack[0] = uint64(n)
		if err := inst.evAlloc.CallWithStack(ctx, stack); err != nil {
			return "", e.evaluatorError(parent, ctx, err)
		}
		if addr = uint32(stack[0]); addr == 0 {
			return "", fmt.Errorf("%w: no room for the input", errFallback)
		}
	}
	mem := inst.ev.mod.Memory()
	if !mem.Write(addr, prog) || !mem.Write(addr+uint32(len(prog)), values) {
		return "", fmt.Errorf("%w: input buffer out of range", ErrGuest)
	}
	stack[0], stack[1], stack[2], stack[3] = uint64(len(prog)), uint64(len(values)), uint64(e.cfg.MaxDepth), uint64(e.cfg.MaxOutputBytes)
	if err := inst.evRender.CallWithStack(ctx, stack); err != nil {
		return "", e.evaluatorError(parent, ctx, err)
	}
	reusable = ctx.Err() == nil
	rec, ok := mem.Read(uint32(stack[0]), 12)
	if !ok {
		return "", fmt.Errorf("%w: result out of range", ErrGuest)
	}
	status, at, n := binary.LittleEndian.Uint32(rec), binary.LittleEndian.Uint32(rec[4:]), binary.LittleEndian.Uint32(rec[8:])
	res, ok := mem.Read(at, n)
	if !ok {
		return "", fmt.Errorf("%w: result out of range", ErrGuest)
	}
	switch status {
	case evalOK:
		return string(res), nil
	case evalFallback:
		return "", fmt.Errorf("%w: %s", errFallback, res)
	}
	return "", fmt.Errorf("%w: evaluator status %d", ErrGuest, status)
}

// evaluatorError maps a failed evaluator call: the caller's context
// and the deadline as in classify, anything else (a trap: its stack
// overflowed, its memory limit) is handed to the Go guest, which
// reports what it finds.
func (e *Engine) evaluatorError(parent, ctx context.Context, err error) error {
	if perr := parent.Err(); perr != nil {
		return fmt.Errorf("template evaluation: %w", perr)
	}
	if context.Cause(ctx) == errEvalTimeout {
		return fmt.Errorf("%w after %s", ErrTimeout, e.cfg.Timeout)
	}
	return fmt.Errorf("%w: %w", errFallback, err)
}

// Stats counts renders since New, and the instances ready now.
type Stats struct {
	// Evaluated: renders of a cached program the evaluator finished;
	// HandedBack: those it handed to the Go guest.
	Evaluated, HandedBack uint64
	// GoGuest: renders the Go guest made, handed back or of a
	// template not cached.
	GoGuest uint64
	// GoInstances: instances of the Go guest made, each when an
	// evaluation first needed one in its instance.
	GoInstances uint64
	// Ready: instances in the pool.
	Ready int
}

// Stats returns the counts.
func (e *Engine) Stats() Stats {
	return Stats{Evaluated: e.fast.Load(), HandedBack: e.fallbacks.Load(), GoGuest: e.goRenders.Load(),
		GoInstances: e.goInstances.Load(), Ready: len(e.pool)}
}

// maxProgramBytes bounds a program the host accepts from the guest for
// its cache, as a multiple of the template's length (an encoded
// program is about as long as its template).
func maxProgramBytes(templateLen int) int { return 4*templateLen + 256 }

// run is one evaluation in one instance: src is the template, or its
// program with abi.FlagProgram. With abi.FlagEmitProgram, it also
// returns the template's program when it parsed.
func (e *Engine) run(parent context.Context, src string, values []byte, checkOnly bool, flags uint32) (_ string, program []byte, _ error) {
	inst, err := e.acquire(parent)
	if err != nil {
		return "", nil, err
	}
	reusable := false
	defer func() { e.release(inst, reusable) }()
	ctx, cancel := context.WithTimeoutCause(parent, e.cfg.Timeout, errEvalTimeout)
	defer cancel()

	g, err := e.goGuest(ctx, inst)
	if err != nil {
		return "", nil, err
	}
	stack := inst.stack
	addr := e.inAddr
	if n := len(src) + len(values); n > int(e.inCap) {
		stack[0] = uint64(n)
		if err := g.alloc.CallWithStack(ctx, stack); err != nil {
			return "", nil, e.classify(parent, ctx, g, err)
		}
		addr = uint32(stack[0])
	}
	mem := g.mod.Memory()
	if !mem.WriteString(addr, src) || !mem.Write(addr+uint32(len(src)), values) {
		return "", nil, fmt.Errorf("%w: input buffer out of range", ErrGuest)
	}
	var fn api.Function
	if checkOnly {
		fn = g.check
		stack[0], stack[1], stack[2] = uint64(len(src)), uint64(e.cfg.MaxDepth), uint64(flags)
	} else {
		fn = g.render
		stack[0], stack[1], stack[2], stack[3], stack[4] = uint64(len(src)), uint64(len(values)), uint64(e.cfg.MaxDepth), uint64(e.cfg.MaxOutputBytes), uint64(flags)
	}
	if err := fn.CallWithStack(ctx, stack); err != nil {
		return "", nil, e.classify(parent, ctx, g, err)
	}
	status := abi.Status(stack[0])
	if err := g.result.CallWithStack(ctx, stack); err != nil {
		return "", nil, e.classify(parent, ctx, g, err)
	}
	res, ok := mem.Read(uint32(stack[0]>>32), uint32(stack[0]))
	if !ok {
		return "", nil, fmt.Errorf("%w: result out of range", ErrGuest)
	}
	if flags&abi.FlagEmitProgram != 0 {
		if err := g.program.CallWithStack(ctx, stack); err != nil {
			return "", nil, e.classify(parent, ctx, g, err)
		}
		if n := uint32(stack[0]); n > 0 && int(n) <= maxProgramBytes(len(src)) {
			if p, ok := mem.Read(uint32(stack[0]>>32), n); ok {
				program = bytes.Clone(p)
			}
		}
	}
	// Every call returned before the deadline (wazero may close the
	// instance when it passed during a call): the instance may be reset
	// and used again.
	reusable = ctx.Err() == nil
	switch status {
	case abi.StatusOK:
		return string(res), program, nil
	case abi.StatusSyntax:
		if len(res) < abi.SyntaxHeader {
			return "", nil, fmt.Errorf("%w: short syntax error result", ErrGuest)
		}
		return "", nil, &SyntaxError{
			Line:    int(binary.LittleEndian.Uint32(res)),
			Column:  int(binary.LittleEndian.Uint32(res[4:])),
			Message: string(res[abi.SyntaxHeader:]),
		}
	case abi.StatusTooDeep:
		return "", nil, fmt.Errorf("%w: %s", ErrTooDeep, res)
	case abi.StatusOutputLarge:
		return "", program, fmt.Errorf("%w: %s", ErrOutputTooLarge, res)
	case abi.StatusValues:
		return "", program, fmt.Errorf("%w: %s", ErrValues, res)
	case abi.StatusRender:
		return "", program, fmt.Errorf("%w: %s", ErrRender, res)
	case abi.StatusProgram:
		return "", nil, fmt.Errorf("%w: %w: %s", ErrGuest, errBadProgram, res)
	}
	return "", nil, fmt.Errorf("%w: status %d: %s", ErrGuest, status, res)
}

// classify maps a failed call: the caller's context first, then the
// evaluation's deadline, then the Go runtime's fatal errors (which it
// writes to stderr before exiting with code 2).
func (e *Engine) classify(parent, ctx context.Context, inst *goInstance, err error) error {
	if perr := parent.Err(); perr != nil {
		return fmt.Errorf("template evaluation: %w", perr)
	}
	if context.Cause(ctx) == errEvalTimeout {
		return fmt.Errorf("%w after %s", ErrTimeout, e.cfg.Timeout)
	}
	msg := inst.stderr.String()
	switch {
	case bytes.Contains([]byte(msg), []byte("out of memory")):
		return fmt.Errorf("%w (limit %d bytes)", ErrMemory, e.cfg.MemoryLimitBytes)
	case bytes.Contains([]byte(msg), []byte("stack exceeds")), bytes.Contains([]byte(err.Error()), []byte("stack overflow")):
		return fmt.Errorf("%w: %s", ErrTooDeep, firstLine(msg))
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		return fmt.Errorf("%w: guest exited with code %d: %s", ErrGuest, exit.ExitCode(), firstLine(msg))
	}
	return fmt.Errorf("%w: %w", ErrGuest, err)
}

func firstLine(s string) string {
	if i := bytes.IndexByte([]byte(s), '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Close stops the pool and releases the runtime and the compilation
// cache. Evaluations under way finish first.
func (e *Engine) Close(ctx context.Context) error {
	var err error
	e.once.Do(func() {
		e.mu.Lock()
		e.closed = true
		e.mu.Unlock()
		close(e.stop)
		e.wg.Wait()
		for _, ch := range []chan *instance{e.pool, e.dirty} {
		drain:
			for {
				select {
				case inst := <-ch:
					inst.close()
				default:
					break drain
				}
			}
		}
		err = errors.Join(e.rt.Close(ctx), e.cache.Close(ctx), e.guest.image.close(), e.evaluator.image.close())
	})
	return err
}
