package gcpace

import (
	"log/slog"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

const (
	// Percent is the GOGC the pacer keeps for the live heap that is not
	// resident by design: Go's default.
	Percent = 100
	// MinHeadroom is the least the heap may grow past the live heap before
	// a collection, so that a small heap is not collected all the time.
	MinHeadroom = 64 << 20
	// minPercent bounds how often the collector runs however large the
	// resident part: at least a tenth of the live heap of headroom.
	minPercent = 10
	// interval is how often the pacer looks at the live heap: the live
	// heap only changes at the end of a collection, a few a second at most.
	interval = 500 * time.Millisecond
)

// Resident reports the bytes of the live heap that stay live by design.
type Resident func() int64

var pacer struct {
	mu      sync.Mutex
	sources map[*Resident]struct{}
	stop    chan struct{}
	done    chan struct{}
	percent int // the GOGC set last; 0 before the first
}

// Register adds what f reports to the resident part of the heap and starts
// pacing the collector, once for the process. The returned function
// removes f; once the last is removed, the pacer stops and GOGC is put
// back to Percent. When the GOGC environment variable is set, the
// operator's setting stands: Register paces nothing.
func Register(f Resident) (unregister func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	p := &f
	pacer.mu.Lock()
	if pacer.sources == nil {
		pacer.sources = map[*Resident]struct{}{}
	}
	pacer.sources[p] = struct{}{}
	if pacer.stop == nil {
		pacer.stop, pacer.done = make(chan struct{}), make(chan struct{})
		go run(pacer.stop, pacer.done)
	}
	pacer.mu.Unlock()
	pace() // at once: the pacer's next look is an interval away
	var once sync.Once
	return func() { once.Do(func() { remove(p) }) }
}

func remove(p *Resident) {
	pacer.mu.Lock()
	delete(pacer.sources, p)
	var stop, done chan struct{}
	if len(pacer.sources) == 0 && pacer.stop != nil {
		stop, done = pacer.stop, pacer.done
		pacer.stop, pacer.done = nil, nil
	}
	pacer.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// run adjusts GOGC every interval until stop closes, then restores it.
func run(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			pace()
		case <-stop:
			paceMu.Lock()
			apply(Percent)
			pacer.mu.Lock()
			pacer.percent = 0
			pacer.mu.Unlock()
			paceMu.Unlock()
			return
		}
	}
}

// paceMu orders the settings: a pace that began before the pacer stopped
// ends before GOGC is restored.
var paceMu sync.Mutex

// pace sets GOGC for the live heap as of the last collection, while the
// pacer runs.
func pace() {
	paceMu.Lock()
	defer paceMu.Unlock()
	pacer.mu.Lock()
	running := pacer.stop != nil
	pacer.mu.Unlock()
	if !running {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	live := int64(0)
	if sample[0].Value.Kind() == metrics.KindUint64 {
		live = int64(sample[0].Value.Uint64())
	}
	apply(PercentFor(live, resident()))
}

// resident sums what the sources report.
func resident() int64 {
	pacer.mu.Lock()
	defer pacer.mu.Unlock()
	var n int64
	for f := range pacer.sources {
		n += (*f)()
	}
	return n
}

// apply sets GOGC to percent unless it is within a twentieth of the last
// setting (SetGCPercent stops the world for a moment).
func apply(percent int) {
	pacer.mu.Lock()
	last := pacer.percent
	if last != 0 && abs(percent-last)*20 < last {
		pacer.mu.Unlock()
		return
	}
	pacer.percent = percent
	pacer.mu.Unlock()
	debug.SetGCPercent(percent)
	slog.Debug("GC pace set", "gogc", percent)
}

// PercentFor is the GOGC that lets a heap of live bytes, resident of them
// live by design, grow by Percent of the rest (at least MinHeadroom)
// before the next collection: between minPercent and Percent.
func PercentFor(live, resident int64) int {
	if live <= 0 {
		return Percent
	}
	resident = min(max(resident, 0), live)
	headroom := max((live-resident)*Percent/100, MinHeadroom)
	return int(min(max(headroom*100/live, minPercent), Percent))
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
