package render

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// cardHTML is a typical 1200×630 social card.
const cardHTML = `<div style="width:1200px;height:630px;display:flex;align-items:center;justify-content:center;
background:linear-gradient(135deg,#1e3a8a,#9333ea);color:#fff;font:bold 64px sans-serif">Launch day %d 🚀</div>`

// BenchmarkCard renders a 1200×630 card at device scale 2 with one caller
// per tab, so the pool is full and every tab warm, and reports the
// throughput and the latency of Render:
//
//	go test -run '^$' -bench BenchmarkCard -benchtime 40x ./origin/render/
func BenchmarkCard(b *testing.B) {
	tabs := runtime.GOMAXPROCS(0) // RunParallel's callers
	e := newEngine(b, func(c *Config) { c.Tabs = tabs })
	card := func(i int64) *Request {
		return &Request{OrgID: "o", HTML: fmt.Sprintf(cardHTML, i), DeviceScale: 2, Twemoji: true,
			MaxWait: 5 * time.Second, MaxWidth: 16384, MaxHeight: 16384}
	}
	// Warm every tab, and the emoji index, before measuring.
	var wg sync.WaitGroup
	for i := range 2 * tabs {
		wg.Go(func() {
			if _, err := e.Render(context.Background(), card(int64(i))); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		return
	}

	var (
		mu        sync.Mutex
		latencies []time.Duration
		n         atomic.Int64
	)
	b.ResetTimer()
	cpuBefore := chromiumCPU(e.profiles)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			began := time.Now()
			res, err := e.Render(context.Background(), card(n.Add(1)))
			took := time.Since(began)
			if err != nil {
				b.Error(err)
				return
			}
			if res.Width != 2400 || res.Height != 1260 {
				b.Errorf("card of %dx%d, want 2400x1260", res.Width, res.Height)
				return
			}
			mu.Lock()
			latencies = append(latencies, took)
			mu.Unlock()
		}
	})
	elapsed := time.Since(start)
	cpu := chromiumCPU(e.profiles) - cpuBefore
	b.StopTimer()
	if len(latencies) == 0 {
		return
	}
	slices.Sort(latencies)
	ms := func(q float64) float64 {
		return float64(latencies[int(q*float64(len(latencies)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(float64(len(latencies))/elapsed.Seconds(), "renders/s")
	b.ReportMetric(ms(0.5), "p50-ms")
	b.ReportMetric(ms(0.95), "p95-ms")
	b.ReportMetric(float64(cpu)/float64(time.Millisecond)/float64(len(latencies)), "chromium-cpu-ms/render")
}

// chromiumCPU is the CPU time used so far by the Chromium processes of the
// profiles under dir, with their children that already exited (a helper's
// time moves to its parent's when it is reaped). The machine may be shared,
// so this measures a render's cost better than its latency does.
func chromiumCPU(dir string) time.Duration {
	var total time.Duration
	for _, pid := range Processes(dir) {
		self, children := processCPU(pid)
		total += self + children
	}
	return total
}

// processCPU is the CPU time process pid has used, and that of its
// children that exited; 0 when it is gone.
func processCPU(pid int) (self, children time.Duration) {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, 0
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0
	}
	// After the command: state is field 3; utime, stime, cutime and cstime
	// are fields 14 to 17.
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 15 {
		return 0, 0
	}
	var ticks [4]int64
	for k, v := range f[11:15] {
		ticks[k], _ = strconv.ParseInt(v, 10, 64)
	}
	return time.Duration(ticks[0]+ticks[1]) * time.Second / clockTicks, time.Duration(ticks[2]+ticks[3]) * time.Second / clockTicks
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on Linux.
const clockTicks = 100
