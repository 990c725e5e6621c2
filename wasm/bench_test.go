package wasm

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/pictorhq/pictor/wasm/internal/hbs"
)

// cardTemplate is a typical social card: 2 KB of HTML and CSS with 10
// variables, one #if and one #each.
const cardTemplate = `<!DOCTYPE html>
<html><head><meta charset="utf-8"><style>
html,body{margin:0;padding:0}
.card{box-sizing:border-box;width:1200px;height:630px;padding:72px 80px;display:flex;flex-direction:column;
justify-content:space-between;background:linear-gradient(135deg,{{theme.from}} 0%,{{theme.to}} 100%);color:#fff;
font-family:"DejaVu Sans","Liberation Sans",sans-serif}
.kicker{font-size:28px;letter-spacing:4px;text-transform:uppercase;opacity:.8}
h1{margin:0;font-size:76px;line-height:1.1;font-weight:800;text-shadow:0 4px 18px rgba(0,0,0,.35)}
.subtitle{margin-top:24px;font-size:36px;line-height:1.3;opacity:.92}
.tags{display:flex;gap:16px;margin:0;padding:0;list-style:none}
.tag{padding:8px 20px;border-radius:999px;background:rgba(255,255,255,.18);font-size:26px}
.foot{display:flex;justify-content:space-between;align-items:center;font-size:30px;opacity:.9}
.author{display:flex;align-items:center;gap:20px}
.avatar{width:72px;height:72px;border-radius:50%;border:3px solid rgba(255,255,255,.6)}
</style></head><body>
<div class="card">
  <div>
    <div class="kicker">{{kicker}}</div>
    <h1>{{title}}</h1>
    <p class="subtitle">{{subtitle}}</p>
  </div>
  <ul class="tags">
    {{#each tags}}
    <li class="tag">#{{this}}</li>
    {{/each}}
  </ul>
  <div class="foot">
    <div class="author">
      {{#if author.avatar}}<img class="avatar" src="{{author.avatar}}" alt="">{{/if}}
      <span>{{author.name}}</span>
    </div>
    <span>{{site}} &middot; {{date}}</span>
  </div>
</div>
</body></html>
`

const cardValues = `{"kicker":"Pictor engineering","title":"Rendering templates in a WebAssembly sandbox",
"subtitle":"Handlebars, wazero & a fresh instance for every evaluation","tags":["go","wasm","handlebars"],
"author":{"name":"Ada Lovelace","avatar":"https://example.com/ada.png?s=144&r=g"},
"site":"pictor.example","date":"2026-03-01","theme":{"from":"#0f172a","to":"#1e3a8a"}}`

// p50 of durations.
func p50(ds []time.Duration) time.Duration {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// timings collects the wall and CPU time of each call of f.
type timings struct{ wall, cpu []time.Duration }

func (tm *timings) measure(f func()) {
	c, w := threadCPU(), time.Now()
	f()
	tm.wall = append(tm.wall, time.Since(w))
	tm.cpu = append(tm.cpu, threadCPU()-c)
}

// report reports the p50s in µs; the CPU time is the thread's (see
// threadCPU).
func (tm *timings) report(b *testing.B) {
	b.ReportMetric(float64(p50(tm.wall).Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(p50(tm.cpu).Nanoseconds())/1e3, "p50-cpu-µs")
}

func checkCard(b *testing.B, out string, err error) {
	if err != nil || !strings.Contains(out, "Rendering templates in a WebAssembly sandbox") || !strings.Contains(out, "&amp;") {
		b.Fatalf("card render = %.80q…, %v", out, err)
	}
}

// nativeTimings times the same runtime (package hbs) called
// in-process: the template parsed once, as the sandbox caches it, and
// each call parsing the values and rendering.
func nativeTimings(b *testing.B, n int) *timings {
	cfg := DefaultConfig()
	tpl, err := hbs.Parse(cardTemplate, cfg.MaxDepth)
	if err != nil {
		b.Fatal(err)
	}
	tm := &timings{}
	for range n {
		var out string
		var err error
		tm.measure(func() {
			var v hbs.Value
			if v, err = hbs.ParseValues([]byte(cardValues), cfg.MaxDepth); err == nil {
				out, err = tpl.Render(v, cfg.MaxOutputBytes)
			}
		})
		checkCard(b, out, err)
	}
	return tm
}

// BenchmarkCard renders the card (p50 of wall and of thread CPU time):
//   - native: package hbs in-process (parse, values, render);
//   - native-cached: the same with the template parsed once, as the
//     sandbox caches it (nativeTimings);
//   - sandboxed: Engine.Render with a warm pool (the pool is let refill
//     between evaluations, untimed): the latency a request sees when the
//     engine is not saturated; also reports native-cached's p50 and the
//     overhead ratio;
//   - sandboxed-saturated: back to back with no pool, so each
//     evaluation also pays for its instance (what throughput costs);
//   - instantiate: a fresh instance from the snapshot alone (the
//     evaluator's: the Go guest's is made only when an evaluation needs it);
//   - cold-instance: an instance started without the snapshot (the Go
//     runtime's _initialize), what each evaluation would cost otherwise.
func BenchmarkCard(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ctx := context.Background()
	b.Run("native", func(b *testing.B) {
		nativeTimings(b, 200) // warm-up
		tm := &timings{}
		for b.Loop() {
			var out string
			var err error
			tm.measure(func() { out, err = renderNative(cardTemplate, []byte(cardValues), DefaultConfig()) })
			checkCard(b, out, err)
		}
		tm.report(b)
	})
	b.Run("native-cached", func(b *testing.B) {
		nativeTimings(b, 200) // warm-up
		b.ResetTimer()
		nativeTimings(b, b.N).report(b)
	})
	b.Run("sandboxed", func(b *testing.B) {
		e := newEngine(b, func(c *Config) { c.PoolSize = 4 })
		for range 50 { // warm-up
			out, err := e.Render(ctx, cardTemplate, []byte(cardValues))
			checkCard(b, out, err)
		}
		tm := &timings{}
		b.ResetTimer()
		for b.Loop() {
			b.StopTimer()
			for len(e.pool) < cap(e.pool) {
				<-e.pooled
			}
			b.StartTimer()
			var out string
			var err error
			tm.measure(func() { out, err = e.Render(ctx, cardTemplate, []byte(cardValues)) })
			checkCard(b, out, err)
		}
		b.StopTimer()
		native := nativeTimings(b, 500)
		tm.report(b)
		b.ReportMetric(float64(p50(native.wall).Nanoseconds())/1e3, "native-p50-µs")
		b.ReportMetric(float64(p50(native.cpu).Nanoseconds())/1e3, "native-p50-cpu-µs")
		b.ReportMetric(float64(p50(tm.wall))/float64(p50(native.wall)), "overhead-x")
		b.ReportMetric(float64(p50(tm.cpu))/float64(p50(native.cpu)), "overhead-cpu-x")
	})
	b.Run("sandboxed-saturated", func(b *testing.B) {
		e := newEngine(b, func(c *Config) { c.PoolSize = 0 })
		for range 20 {
			out, err := e.Render(ctx, cardTemplate, []byte(cardValues))
			checkCard(b, out, err)
		}
		tm := &timings{}
		b.ResetTimer()
		for b.Loop() {
			var out string
			var err error
			tm.measure(func() { out, err = e.Render(ctx, cardTemplate, []byte(cardValues)) })
			checkCard(b, out, err)
		}
		tm.report(b)
	})
	b.Run("instantiate", func(b *testing.B) {
		e := newEngine(b, func(c *Config) { c.PoolSize = 0 })
		tm := &timings{}
		for b.Loop() {
			var inst *instance
			var err error
			tm.measure(func() { inst, err = e.instantiate(ctx) })
			if err != nil {
				b.Fatal(err)
			}
			inst.close()
		}
		tm.report(b)
	})
	b.Run("cold-instance", func(b *testing.B) {
		e := newEngine(b, func(c *Config) { c.PoolSize = 0 })
		tm := &timings{}
		for b.Loop() {
			var mod api.Module
			var err error
			tm.measure(func() { mod, err = e.coldInstance(ctx, e.guest.prepared, &clocks{}) })
			if err != nil {
				b.Fatal(err)
			}
			mod.Close(ctx)
		}
		tm.report(b)
	})
}
