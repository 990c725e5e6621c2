package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pictorhq/pictor/wasm/internal/hbs"
)

// TestEvaluatorUpToDate rebuilds the evaluator with its build.sh and
// fails if the embedded evaluator.wasm differs: run
// wasm/evaluator/build.sh after changing eval.c.
func TestEvaluatorUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the evaluator")
	}
	out := filepath.Join(t.TempDir(), "evaluator.wasm")
	cmd := exec.Command("bash", "evaluator/build.sh", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("evaluator/build.sh (clang-14 and lld-14 are in `make test-deps`): %v\n%s", err, b)
	}
	built, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(built, evaluatorWasm) {
		t.Fatalf("wasm/evaluator.wasm is stale (%d bytes; a fresh build has %d): run wasm/evaluator/build.sh", len(evaluatorWasm), len(built))
	}
}

// TestEvaluatorImports: the evaluator imports nothing at all, so it can
// reach nothing but its own memory.
func TestEvaluatorImports(t *testing.T) {
	mod := sharedEngine(t).evaluator.compiled
	for _, f := range mod.ImportedFunctions() {
		module, name, _ := f.Import()
		t.Errorf("evaluator imports %s.%s", module, name)
	}
	if len(mod.ImportedMemories()) != 0 {
		t.Error("evaluator imports a memory")
	}
}

// TestEvaluatorHandsBack: what the evaluator does not cover reaches
// the Go guest, whose result the caller gets; what it covers it
// renders itself, in an instance that never makes a Go guest.
func TestEvaluatorHandsBack(t *testing.T) {
	tests := []struct {
		name     string
		edit     func(*Config)
		template string
		values   string
		want     string
		err      error
		back     bool
	}{
		{name: "covered", template: "{{#each a}}{{@index}}={{this}};{{/each}} {{b.c}} {{{d}}}", values: `{"a":[1.5,"x<"],"b":{"c":true},"d":"<i>"}`,
			want: "0=1.5;1=x&lt;; true <i>"},
		{name: "number spellings", template: "{{a}} {{b}} {{c}} {{lookup l 1.50}}{{lookup l -2}}", values: `{"a":1e21,"b":-0.000001,"c":123456789012345680000,"l":{"1.5":"k","-2":"m"}}`,
			want: "1e+21 -0.000001 123456789012345680000 km"},
		{name: "a partial", template: "{{> card}}", err: ErrRender, back: true},
		{name: "a missing helper", template: "{{shout name}}", values: `{"name":"x"}`, err: ErrRender, back: true},
		{
			// 1 == "1": the inner context is not a new depth, so ../ is
			// the root (handlebars.js's depths).
			name:     "a number compared with a string",
			template: "{{#each s}}{{#each @root.n}}{{../this}}{{/each}}{{/each}}",
			values:   `{"s":["1"],"n":[1]}`,
			want:     "[object Object]",
			back:     true,
		},
		{
			// Deeper than the evaluator's 256 KiB stack: it traps, and
			// the Go guest, whose stack grows, renders it.
			name:     "its stack overflows",
			edit:     func(c *Config) { c.MaxDepth = 5000 },
			template: nest("{{#if a}}", "x", "{{/if}}", 4000),
			values:   `{"a":1}`,
			want:     "x",
			back:     true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t, func(c *Config) {
				c.PoolSize = 0 // an instance of its own for each evaluation
				if tt.edit != nil {
					tt.edit(c)
				}
			})
			ctx := context.Background()
			if err := e.Check(ctx, tt.template); err != nil {
				t.Fatalf("Check: %v", err)
			}
			goInstances := e.Stats().GoInstances
			got, err := e.Render(ctx, tt.template, []byte(tt.values))
			if !errors.Is(err, tt.err) || got != tt.want {
				t.Fatalf("Render = %q, %v; want %q, %v", got, err, tt.want, tt.err)
			}
			if st := e.Stats(); st.Evaluated+st.HandedBack != 1 || (st.HandedBack == 1) != tt.back ||
				(st.GoInstances > goInstances) != tt.back {
				t.Fatalf("stats %+v (Go guest instances before the render: %d); want handed back: %v", st, goInstances, tt.back)
			}
			native, nerr := renderNative(tt.template, []byte(tt.values), e.cfg)
			if native != got || (nerr == nil) != (err == nil) {
				t.Errorf("native engine: %q, %v", native, nerr)
			}
		})
	}
}

// FuzzEvaluator hands the evaluator arbitrary programs and values (the
// host only ever passes what the Go guest and hbs.EncodeValues made,
// but the evaluator must not trust them): it renders, hands back or
// traps, and the engine keeps working.
func FuzzEvaluator(f *testing.F) {
	cfg := DefaultConfig()
	for _, c := range []struct{ template, values string }{
		{"Hello {{name}}!", `{"name":"<world>"}`},
		{"{{#each a as |x i|}}{{i}}{{x.b}}{{else}}none{{/each}}", `{"a":[{"b":1},{"b":[2,3]}]}`},
		{"{{#with a}}{{../b}}{{lookup this 'c'}}{{/with}}{{@root.d.length}}", `{"a":{"c":null},"b":false,"d":[0]}`},
	} {
		tpl, err := hbs.Parse(c.template, cfg.MaxDepth)
		if err != nil {
			f.Fatal(err)
		}
		v, err := hbs.ParseValues([]byte(c.values), cfg.MaxDepth)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(tpl.Encode(nil), hbs.EncodeValues(nil, v))
	}
	f.Add([]byte("hbs\x01\x00"), []byte{0, 0, 0, 8, 0})
	f.Add([]byte("hbs\x01\x00\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01"), []byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	e := newEngine(f, nil)
	f.Fuzz(func(t *testing.T, prog, values []byte) {
		out, err := e.evaluate(context.Background(), prog, values)
		if err != nil && !errors.Is(err, errFallback) {
			t.Fatalf("evaluate = %q, %v; want an output or a hand-back", out, err)
		}
		if got, err := e.Render(context.Background(), "ok {{a}}", []byte(`{"a":1}`)); err != nil || got != "ok 1" {
			t.Fatalf("render after = %q, %v", got, err)
		}
	})
}

// TestEvaluatorReset: an evaluator instance reset after an evaluation
// holds nothing of it (its memory is the snapshot's again).
func TestEvaluatorReset(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.PoolSize = 1 })
	if !e.reuse {
		t.Fatal("instances are not reset on this system (no /proc/self/pagemap?)")
	}
	secret := "s3cr3t-" + strings.Repeat("k", 20)
	tpl, err := hbs.Parse("{{a}}{{a}}", e.cfg.MaxDepth)
	if err != nil {
		t.Fatal(err)
	}
	v, err := hbs.ParseValues([]byte(`{"a":"`+secret+`"}`), e.cfg.MaxDepth)
	if err != nil {
		t.Fatal(err)
	}
	prog, values := tpl.Encode(nil), hbs.EncodeValues(nil, v)
	inst, err := e.instantiate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer inst.close()
	scratch := e.resetScratch()
	mem := inst.ev.mod.Memory()
	for i := range 3 {
		if !mem.Write(e.evInAddr, append(append([]byte(nil), prog...), values...)) {
			t.Fatal("write input")
		}
		stack := inst.stack
		stack[0], stack[1], stack[2], stack[3] = uint64(len(prog)), uint64(len(values)), 64, 1<<20
		if err := inst.evRender.CallWithStack(context.Background(), stack); err != nil {
			t.Fatal(err)
		}
		if b, _ := mem.Read(0, mem.Size()); !bytes.Contains(b, []byte(secret+secret)) {
			t.Fatal("the evaluation left no output in memory: this test checks nothing")
		}
		if err := e.reset(inst, scratch); err != nil {
			t.Fatalf("reset: %v", err)
		}
		if b, _ := mem.Read(0, mem.Size()); !bytes.Equal(b, e.evaluator.snapMem) {
			t.Fatalf("evaluation %d: a reset evaluator's memory differs from the snapshot", i)
		}
		for j, g := range inst.ev.globals {
			if g != nil && g.Get() != e.evaluator.globals[j] {
				t.Fatalf("global %d = %d, snapshot %d", j, g.Get(), e.evaluator.globals[j])
			}
		}
	}
}

// FuzzEvaluatorMatchesGo renders templates both with package hbs
// in-process and in the sandbox once the template is cached (the
// evaluator, or the Go guest when it hands back): same output, and an
// error from both or neither. The seeds are the differential corpus.
func FuzzEvaluatorMatchesGo(f *testing.F) {
	raw, err := os.ReadFile("testdata/corpus.json")
	if err != nil {
		f.Fatal(err)
	}
	var cases []corpusCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		f.Fatal(err)
	}
	for _, c := range cases {
		f.Add(c.Template, c.Values)
	}
	e := newEngine(f, func(c *Config) {
		c.MaxOutputBytes = 64 << 10
		c.Timeout = 2 * time.Second
	})
	f.Fuzz(func(t *testing.T, template, values string) {
		if !utf8.ValidString(template) || !utf8.ValidString(values) {
			return // the API's JSON and form decoding hand over valid UTF-8
		}
		ctx := context.Background()
		if e.Check(ctx, template) != nil {
			return
		}
		got, err := e.Render(ctx, template, []byte(values))
		if errors.Is(err, ErrTimeout) {
			return // a runaway loop: package hbs has no deadline
		}
		want, werr := renderNative(template, []byte(values), e.cfg)
		if got != want || (err == nil) != (werr == nil) {
			t.Fatalf("sandbox %q, %v; package hbs %q, %v", got, err, want, werr)
		}
	})
}
