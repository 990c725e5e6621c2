package wasm

import (
	"context"
	"os"
	"sort"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

type countL struct{ counts map[string]int; on *bool }

func (c countL) NewFunctionListener(def api.FunctionDefinition) experimental.FunctionListener {
	name := def.DebugName()
	return experimental.FunctionListenerFunc(func(ctx context.Context, mod api.Module, def api.FunctionDefinition, params []uint64, stack experimental.StackIterator) {
		if *c.on {
			c.counts[name]++
		}
	})
}


func TestExpCount(t *testing.T) {
	bin, _ := os.ReadFile("/tmp/guest-named.wasm")
	on := false
	cl := countL{counts: map[string]int{}, on: &on}
	ctx := experimental.WithFunctionListenerFactory(context.Background(), cl)
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	mod, err := rt.InstantiateWithConfig(ctx, bin, wazero.NewModuleConfig().WithStartFunctions("_initialize"))
	if err != nil {
		t.Fatal(err)
	}
	tpl, vals := os.Getenv("TPL"), os.Getenv("VALS")
	if tpl == "card" {
		tpl, vals = cardTemplate, cardValues
	}
	on = true
	r, _ := mod.ExportedFunction("pictor_alloc").Call(ctx, uint64(len(tpl)+len(vals)))
	mod.Memory().Write(uint32(r[0]), []byte(tpl+vals))
	if _, err := mod.ExportedFunction("pictor_render").Call(ctx, uint64(len(tpl)), uint64(len(vals)), 64, 1<<20); err != nil {
		t.Fatal(err)
	}
	on = false
	type kv struct{ k string; v int }
	var all []kv
	total := 0
	for k, v := range cl.counts {
		all = append(all, kv{k, v})
		total += v
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v > all[j].v })
	t.Logf("total calls %d", total)
	for i := 0; i < 40 && i < len(all); i++ {
		t.Logf("%8d %s", all[i].v, all[i].k)
	}
}
