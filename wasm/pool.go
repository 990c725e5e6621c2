package wasm

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/pictorhq/pictor/wasm/internal/abi"
)

// instance is one instance of the evaluator and, once an evaluation
// needed it, one of the Go guest: good for one evaluation, after which
// they are closed or reset together.
type instance struct {
	ev                moduleInstance
	evAlloc, evRender api.Function
	// g is the Go guest's instance, made by goGuest when an evaluation
	// first needs it (a template to parse, a render handed back): a
	// cached template's render does without, and its instance costs a
	// tenth as much.
	g      *goInstance
	stack  []uint64
	resets int // times reset put it back in the snapshot's state
}

// goInstance is an instance of the Go guest.
type goInstance struct {
	moduleInstance
	alloc, check, render, result, program api.Function
	clk                                   *clocks
	stderr                                *boundedBuffer
}

// instantiate makes a fresh instance, of the evaluator only (see
// goGuest), in the snapshot's state: its memory a private copy-on-write
// mapping of the image, its globals the snapshot's.
func (e *Engine) instantiate(ctx context.Context) (*instance, error) {
	ev, err := e.evaluator.instantiate(ctx, e.rt, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		return nil, err
	}
	inst := &instance{
		ev:       ev,
		evAlloc:  ev.mod.ExportedFunction(abi.ExportAlloc),
		evRender: ev.mod.ExportedFunction(abi.ExportRender),
		stack:    make([]uint64, 5),
	}
	if inst.evAlloc == nil || inst.evRender == nil {
		inst.close()
		return nil, fmt.Errorf("%w: the evaluator lacks the exports of package abi", ErrGuest)
	}
	return inst, nil
}

// goGuest returns inst's Go guest instance, making it first when inst
// has none: in the snapshot's state, its clocks the snapshot's.
func (e *Engine) goGuest(ctx context.Context, inst *instance) (*goInstance, error) {
	if inst.g != nil {
		return inst.g, nil
	}
	stderr := &boundedBuffer{max: 4 << 10}
	clk := &clocks{}
	clk.wall.Store(e.clocks.wall.Load())
	clk.mono.Store(e.clocks.mono.Load())
	m, err := e.guest.instantiate(ctx, e.rt, e.instanceConfig(stderr, clk))
	if err != nil {
		return nil, err
	}
	g := &goInstance{
		moduleInstance: m,
		alloc:          m.mod.ExportedFunction(abi.ExportAlloc),
		check:          m.mod.ExportedFunction(abi.ExportCheck),
		render:         m.mod.ExportedFunction(abi.ExportRender),
		result:         m.mod.ExportedFunction(abi.ExportResult),
		program:        m.mod.ExportedFunction(abi.ExportProgram),
		clk:            clk,
		stderr:         stderr,
	}
	if g.alloc == nil || g.check == nil || g.render == nil || g.result == nil || g.program == nil {
		m.mod.Close(ctx)
		return nil, fmt.Errorf("%w: the guest lacks the exports of package abi", ErrGuest)
	}
	inst.g = g
	e.goInstances.Add(1)
	return g, nil
}

func (i *instance) close() {
	i.ev.mod.Close(context.Background())
	if i.g != nil {
		i.g.mod.Close(context.Background())
	}
}

// closed reports whether wazero closed a module of the instance (a
// deadline, a trap).
func (i *instance) closed() bool {
	return i.ev.mod.IsClosed() || (i.g != nil && i.g.mod.IsClosed())
}

// fill keeps the pool full until Close: it resets the instances that
// come back from evaluations, and makes new ones while ready, dirty
// and busy ones number less than PoolSize.
func (e *Engine) fill() {
	defer e.wg.Done()
	scratch := e.resetScratch()
	for {
		for len(e.pool)+len(e.dirty)+int(e.busy.Load()) < cap(e.pool) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			inst, err := e.instantiate(ctx)
			cancel()
			if err != nil {
				slog.Error("wasm pool instantiate", "err", err)
				select {
				case <-time.After(time.Second):
					continue
				case <-e.stop:
					return
				}
			}
			select {
			case e.pool <- inst:
				e.signalPooled()
			default:
				inst.close()
			}
		}
		select {
		case <-e.stop:
			return
		case inst := <-e.dirty:
			if err := e.reset(inst, scratch); err != nil {
				inst.close() // another is made above
				continue
			}
			select {
			case e.pool <- inst:
				e.signalPooled()
			default:
				inst.close()
			}
		case <-e.wake:
		}
	}
}

func (e *Engine) signalPooled() {
	select {
	case e.pooled <- struct{}{}:
	default:
	}
}

// acquire takes a ready instance, or makes one when the pool is empty.
// The instance goes back with release.
func (e *Engine) acquire(ctx context.Context) (*instance, error) {
	e.busy.Add(1)
	for {
		select {
		case inst := <-e.pool:
			if inst.closed() {
				inst.close()
				continue
			}
			return inst, nil
		default:
		}
		break
	}
	inst, err := e.instantiate(ctx)
	if err != nil {
		e.release(nil, false)
	}
	return inst, err
}

// release hands an instance back after an evaluation: to the filler to
// be reset when it may be (its calls all returned), closed otherwise.
func (e *Engine) release(inst *instance, reusable bool) {
	if inst != nil && reusable && e.reuse {
		select {
		case e.dirty <- inst:
			e.busy.Add(-1)
			return
		default:
		}
	}
	if inst != nil {
		inst.close()
	}
	e.busy.Add(-1)
	select {
	case e.wake <- struct{}{}:
	default:
	}
}
