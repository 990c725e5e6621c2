package origins

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of Config.
const (
	DefaultHealthPath = "/healthz"
	DefaultInterval   = time.Second
	DefaultTimeout    = 500 * time.Millisecond
	DefaultFailAfter  = 2
	DefaultRiseAfter  = 1
)

// Config configures a Pool.
type Config struct {
	// URLs are the origins' base URLs, in the order tried when none is
	// healthy.
	URLs []string
	// HealthPath is what a health check GETs on each origin; 200 is healthy.
	HealthPath string
	// Interval is the time between two rounds of health checks.
	Interval time.Duration
	// Timeout bounds one health check, its connection included.
	Timeout time.Duration
	// FailAfter failed checks in a row take a healthy origin out;
	// RiseAfter successful ones bring it back.
	FailAfter, RiseAfter int
	// Registerer receives the pool's metrics; nil keeps them unregistered.
	Registerer prometheus.Registerer
}

// DefaultConfig returns a Config without origins.
func DefaultConfig() Config {
	return Config{HealthPath: DefaultHealthPath, Interval: DefaultInterval, Timeout: DefaultTimeout,
		FailAfter: DefaultFailAfter, RiseAfter: DefaultRiseAfter}
}

// Validate reports the first invalid setting.
func (c *Config) Validate() error {
	if err := CheckURLs(c.URLs); err != nil {
		return err
	}
	if !strings.HasPrefix(c.HealthPath, "/") {
		return fmt.Errorf("health path %q: want an absolute path", c.HealthPath)
	}
	if c.Interval <= 0 || c.Timeout <= 0 {
		return fmt.Errorf("health check interval %v and timeout %v: want positive durations", c.Interval, c.Timeout)
	}
	if c.FailAfter < 1 || c.RiseAfter < 1 {
		return fmt.Errorf("health check thresholds %d and %d: want at least 1", c.FailAfter, c.RiseAfter)
	}
	return nil
}

// CheckURLs reports, in one error, every URL that is not an absolute
// http(s) URL (ErrBadURL), else the first origin given twice, however
// spelled (ErrDuplicate): "http://A:80/" is "http://a".
func CheckURLs(urls []string) error {
	if len(urls) == 0 {
		return ErrNoOrigin
	}
	var bad []string
	seen := map[string]string{}
	var dup error
	for _, raw := range urls {
		u, ok := parse(raw)
		if !ok {
			bad = append(bad, fmt.Sprintf("%q", raw))
			continue
		}
		key := canonical(u)
		if first, ok := seen[key]; ok && dup == nil {
			dup = fmt.Errorf("%q and %q: %w", first, raw, ErrDuplicate)
		}
		seen[key] = raw
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s: %w", strings.Join(bad, ", "), ErrBadURL)
	}
	return dup
}

func parse(raw string) (*url.URL, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, false
	}
	return u, true
}

// canonical is an origin's identity: scheme and host in lower case, the
// default port left out, the path without its trailing slash.
func canonical(u *url.URL) string {
	host := strings.ToLower(u.Host)
	if h, port, err := net.SplitHostPort(host); err == nil &&
		((u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443")) {
		host = h
		if strings.Contains(h, ":") {
			host = "[" + h + "]"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + host + strings.TrimRight(u.EscapedPath(), "/")
}

// Origin is one origin of a pool.
type Origin struct {
	base  string // the URL without its trailing slash
	u     *url.URL
	label string // the URL without credentials, for logs and metrics
	index int

	up atomic.Bool

	mu     sync.Mutex
	fails  int    // failed checks in a row
	passes int    // successful checks in a row
	epoch  uint64 // advanced by each failed request: older checks are void

	upGauge                    prometheus.Gauge
	answered, failed           prometheus.Counter
	checksPassed, checksFailed prometheus.Counter
}

// URL is the origin's base URL, without a trailing slash: append a path
// starting with "/".
func (o *Origin) URL() string { return o.base }

// Parsed returns the origin's base URL parsed, a copy the caller may change.
func (o *Origin) Parsed() url.URL { return *o.u }

// String is the origin's URL without credentials.
func (o *Origin) String() string { return o.label }

// Up reports whether the origin is healthy.
func (o *Origin) Up() bool { return o.up.Load() }

// Pool is a set of origins and their health.
type Pool struct {
	cfg       Config
	all       []*Origin
	next      atomic.Uint64 // round-robin position
	client    *http.Client  // health checks
	failovers prometheus.Counter
	rounds    atomic.Uint64

	changeMu sync.Mutex
	changed  chan struct{} // closed at the next change of a state

	lifeMu sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a pool whose origins are all taken for healthy until a check
// or a request says otherwise. It checks nothing before Start.
func New(cfg Config) (*Pool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	up := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pictor_edge_origin_up",
		Help: "1 while the origin is healthy (its health checks pass and requests reach it), 0 while it is down."}, []string{"origin"})
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pictor_edge_origin_requests_total",
		Help: "Requests sent to each origin: answered (any status), or failed without an answer."}, []string{"origin", "result"})
	checks := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pictor_edge_origin_checks_total",
		Help: "Health checks of each origin, passed or failed."}, []string{"origin", "result"})
	p := &Pool{
		cfg:     cfg,
		changed: make(chan struct{}),
		failovers: prometheus.NewCounter(prometheus.CounterOpts{Name: "pictor_edge_origin_failovers_total",
			Help: "Requests sent again to another origin after one could not answer them."}),
		client: &http.Client{
			Timeout: cfg.Timeout,
			Transport: &http.Transport{
				Proxy: nil,
				// A fresh connection each time: a check proves that the origin
				// still accepts new ones, not that one it accepted is open.
				DisableKeepAlives: true,
				DialContext:       (&net.Dialer{Timeout: cfg.Timeout}).DialContext,
			},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	for i, raw := range cfg.URLs {
		u, _ := parse(raw)
		label := strings.TrimRight(u.Redacted(), "/")
		o := &Origin{base: strings.TrimRight(raw, "/"), u: u, label: label, index: i,
			upGauge: up.WithLabelValues(label), answered: requests.WithLabelValues(label, "answered"),
			failed: requests.WithLabelValues(label, "failed"), checksPassed: checks.WithLabelValues(label, "passed"),
			checksFailed: checks.WithLabelValues(label, "failed")}
		o.up.Store(true)
		o.upGauge.Set(1)
		p.all = append(p.all, o)
	}
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{up, requests, checks, p.failovers} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("register origin metrics: %w", err)
			}
		}
	}
	return p, nil
}

// Origins returns the origins in the order of the configuration.
func (p *Pool) Origins() []*Origin { return p.all }

// Start begins the health checks: a round at once, then one every
// Interval. A lone origin is not checked: it is tried whatever its state,
// so a check would change nothing; its state follows its requests (see
// Attempt.Done). Calling Start again does nothing.
func (p *Pool) Start() {
	p.lifeMu.Lock()
	defer p.lifeMu.Unlock()
	if p.done != nil || len(p.all) < 2 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel, p.done = cancel, make(chan struct{})
	go p.run(ctx, p.done)
}

// Stop ends the health checks and waits for the round in flight, which
// its end interrupts. It is safe without Start.
func (p *Pool) Stop() {
	p.lifeMu.Lock()
	defer p.lifeMu.Unlock()
	if p.done == nil {
		return
	}
	p.cancel()
	<-p.done
	p.client.CloseIdleConnections()
}

func (p *Pool) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(p.cfg.Interval)
	defer tick.Stop()
	for {
		p.CheckNow(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// CheckNow runs one round of health checks, every origin at once, and
// returns when it is over. Start runs rounds on its own; tests call it on
// a pool not started to step the checks.
func (p *Pool) CheckNow(ctx context.Context) {
	var wg sync.WaitGroup
	for _, o := range p.all {
		wg.Go(func() { p.check(ctx, o) })
	}
	wg.Wait()
	if ctx.Err() == nil {
		p.rounds.Add(1)
	}
}

// Rounds counts the rounds of checks completed.
func (p *Pool) Rounds() uint64 { return p.rounds.Load() }

func (p *Pool) check(ctx context.Context, o *Origin) {
	o.mu.Lock()
	epoch := o.epoch
	o.mu.Unlock()
	err := p.probe(ctx, o)
	if ctx.Err() != nil {
		return // stopping: no verdict
	}
	if err == nil {
		o.checksPassed.Inc()
	} else {
		o.checksFailed.Inc()
	}
	o.mu.Lock()
	if o.epoch != epoch {
		// A request failed to reach the origin while the check ran: the
		// check may have been answered before, and says nothing after.
		o.mu.Unlock()
		return
	}
	changed := false
	if err == nil {
		o.fails = 0
		o.passes++
		changed = !o.up.Load() && o.passes >= p.cfg.RiseAfter
	} else {
		o.passes = 0
		o.fails++
		changed = o.up.Load() && o.fails >= p.cfg.FailAfter
	}
	if changed {
		o.up.Store(err == nil)
		if err != nil {
			o.epoch++ // requests sent before do not bring it back
		}
	}
	o.mu.Unlock()
	if changed {
		p.changedState(o, err == nil, "health check", err)
	}
}

func (p *Pool) probe(ctx context.Context, o *Origin) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.base+p.cfg.HealthPath, nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "pictor-edge")
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: %s", errUnhealthy, resp.Status)
	}
	return nil
}

// Attempt is one request sent to an origin, from Begin to Done.
type Attempt struct {
	p     *Pool
	o     *Origin
	epoch uint64
}

// Begin notes that a request is sent to o now; call Done with its outcome.
func (p *Pool) Begin(o *Origin) Attempt {
	o.mu.Lock()
	defer o.mu.Unlock()
	return Attempt{p: p, o: o, epoch: o.epoch}
}

// Done records the attempt's outcome (err nil: the origin answered,
// whatever the status) and classifies its failure. ctx is the request's: a
// failure after its end says nothing of the origin.
//
// This is passive health checking, faster than the checks: a request that
// could not connect, or whose connection the origin reset, takes the
// origin out at once; an answer to a request sent after the origin went
// down brings it back (one sent before may be the last answer of an origin
// that stopped accepting).
func (a Attempt) Done(ctx context.Context, err error) Failure {
	p, o := a.p, a.o
	if err == nil {
		o.answered.Inc()
		o.mu.Lock()
		changed := o.epoch == a.epoch && !o.up.Swap(true)
		if changed {
			o.fails = 0
		}
		o.mu.Unlock()
		if changed {
			p.changedState(o, true, "request", nil)
		}
		return NoFailure
	}
	if ctx.Err() != nil {
		return Canceled
	}
	f := Classify(err)
	if f == Canceled {
		return f
	}
	o.failed.Inc()
	if f != ConnectFailed && f != ConnectionReset {
		return f
	}
	o.mu.Lock()
	o.epoch++
	o.passes = 0
	o.fails = max(o.fails, p.cfg.FailAfter)
	changed := o.up.Swap(false)
	o.mu.Unlock()
	if changed {
		p.changedState(o, false, "request", err)
	}
	return f
}

func (p *Pool) changedState(o *Origin, up bool, by string, cause error) {
	if up {
		o.upGauge.Set(1)
		slog.Info("origin up", "origin", o.label, "by", by)
	} else {
		o.upGauge.Set(0)
		slog.Warn("origin down", "origin", o.label, "by", by, "error", cause)
	}
	p.changeMu.Lock()
	close(p.changed)
	p.changed = make(chan struct{})
	p.changeMu.Unlock()
}

// Changed returns a channel closed at the next change of an origin's
// state.
func (p *Pool) Changed() <-chan struct{} {
	p.changeMu.Lock()
	defer p.changeMu.Unlock()
	return p.changed
}

// Wait blocks until o is up (up true) or down, or ctx ends.
func (p *Pool) Wait(ctx context.Context, o *Origin, up bool) error {
	for {
		ch := p.Changed()
		if o.Up() == up {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			state := "up"
			if up {
				state = "down"
			}
			return fmt.Errorf("origin %s still %s: %w", o, state, ctx.Err())
		}
	}
}

// Order returns, appended to buf[:0], the origins a request tries in
// turn: the healthy ones, starting one further at each call
// (round-robin), then the others in the order of the configuration. When
// none is healthy, that is all of them in order: a request still tries
// them, and reaches one that came back before its check says so.
func (p *Pool) Order(buf []*Origin) []*Origin {
	buf = buf[:0]
	for _, o := range p.all {
		if o.Up() {
			buf = append(buf, o)
		}
	}
	healthy := len(buf)
	for _, o := range p.all {
		listed := false
		for _, h := range buf[:healthy] {
			listed = listed || h == o
		}
		if !listed {
			buf = append(buf, o)
		}
	}
	if healthy > 1 {
		rotate(buf[:healthy], int(p.next.Add(1)-1)%healthy)
	}
	return buf
}

// rotate moves s's first k elements to its end.
func rotate(s []*Origin, k int) {
	reverse(s[:k])
	reverse(s[k:])
	reverse(s)
}

func reverse(s []*Origin) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

// Next returns the first healthy origin after after, in the order of the
// configuration and around (after itself last); when none is healthy, the
// one right after it, so that a caller asking again tries each in turn.
// after nil starts from the first origin. The purge subscriber follows one
// origin at a time this way, moving on when its stream breaks.
func (p *Pool) Next(after *Origin) *Origin {
	n := len(p.all)
	from := 0
	if after != nil {
		from = after.index + 1
	}
	for i := range n {
		if o := p.all[(from+i)%n]; o.Up() {
			return o
		}
	}
	return p.all[from%n]
}

// Do sends a request to the origins of Order in turn until one answers:
// send makes and sends the attempt to the origin it is given. After an
// attempt without an answer, Do tries the next origin if retry allows it
// for the failure (see Unsent and Idempotent), and counts a failover. Any
// answer ends it, whatever its status: a live origin's answer is never
// sent again. Without an answer, it returns the last attempt's error.
func (p *Pool) Do(ctx context.Context, send func(*Origin) (*http.Response, error), retry func(Failure) bool) (*http.Response, error) {
	var buf [8]*Origin
	order := p.Order(buf[:0])
	var err error
	for i, o := range order {
		a := p.Begin(o)
		var resp *http.Response
		resp, err = send(o)
		f := a.Done(ctx, err)
		if err == nil {
			return resp, nil
		}
		if i+1 == len(order) || !retry(f) {
			break
		}
		p.failovers.Inc()
		slog.WarnContext(ctx, "origin request failed; trying the next origin", "origin", o.label, "next", order[i+1].label, "error", err)
	}
	return nil, err
}
