package purgelog

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pictorhq/pictor/edge/origins"
	"github.com/pictorhq/pictor/origin/contract"
)

// Purger applies purges to the edge's cache.
type Purger interface {
	PurgeImage(id string) (int, error)
	PurgeOrg(orgID string) (int, error)
	PurgeTag(tag string) (int, error)
	PurgeAll() error
}

// Config configures a Subscriber.
type Config struct {
	// Origins are the origins whose purge log the subscriber follows, one
	// at a time (they share one store, so they serve the same log).
	Origins *origins.Pool
	// OriginURL is the one origin's base URL when Origins is nil.
	OriginURL string
	Token     string
	Name      string
	// StateFile remembers the last applied event across restarts.
	StateFile string
	Purger    Purger
	// Client talks to the origins; nil uses a client without proxy whose
	// connections time out after a second. The stream is long-lived: give
	// it no overall timeout.
	Client *http.Client
	// AnswerTimeout bounds the wait for the origin's answer (its header)
	// to a stream's request; 0 means DefaultAnswerTimeout.
	AnswerTimeout time.Duration
	// SilenceTimeout is how long an answered stream may go without a
	// frame before the subscriber drops it and reconnects; 0 means
	// DefaultSilenceTimeout. Applying a frame does not count.
	SilenceTimeout time.Duration
}

// DefaultSilenceTimeout is three of the origin's heartbeats.
const DefaultSilenceTimeout = 3 * contract.HeartbeatInterval

// DefaultAnswerTimeout is how long the origin may take to answer a
// stream's request before the subscriber gives up and tries again. The
// origin answers at once, and streams the replay after its header.
const DefaultAnswerTimeout = 30 * time.Second

// Reconnection backoff: it doubles at every stream lost, from minBackoff up
// to maxBackoff, and starts over after a healthy stream.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// errNoAnswer: the origin did not answer a stream's request in time.
var errNoAnswer = errors.New("the origin did not answer the stream's request")

// errSilent: an answered stream brought no frame, not even a heartbeat,
// for the silence timeout.
var errSilent = errors.New("the purge stream went silent")

// Subscriber follows the origins' purge log.
type Subscriber struct {
	cfg   Config
	pool  *origins.Pool
	last  atomic.Uint64
	ready atomic.Bool
	mu    sync.Mutex
	wake  chan struct{} // closed when ready first becomes true
	// after is time.After; tests see the reconnection backoff through it.
	after func(time.Duration) <-chan time.Time
}

// New returns a subscriber positioned at the state file's last event.
func New(cfg Config) (*Subscriber, error) {
	if (cfg.Origins == nil && cfg.OriginURL == "") || cfg.Token == "" || cfg.Purger == nil || cfg.StateFile == "" {
		return nil, fmt.Errorf("edge sync: origin URL, token, purger and state file are required")
	}
	pool := cfg.Origins
	if pool == nil {
		pc := origins.DefaultConfig()
		pc.URLs = []string{cfg.OriginURL}
		var err error
		if pool, err = origins.New(pc); err != nil {
			return nil, fmt.Errorf("edge sync: %w", err)
		}
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Transport: &http.Transport{Proxy: nil,
			DialContext: (&net.Dialer{Timeout: time.Second, KeepAlive: 30 * time.Second}).DialContext}}
	}
	if cfg.AnswerTimeout <= 0 {
		cfg.AnswerTimeout = DefaultAnswerTimeout
	}
	if cfg.SilenceTimeout <= 0 {
		cfg.SilenceTimeout = DefaultSilenceTimeout
	}
	s := &Subscriber{cfg: cfg, pool: pool, wake: make(chan struct{}), after: time.After}
	if raw, err := os.ReadFile(cfg.StateFile); err == nil {
		if n, err := strconv.ParseUint(strings.TrimSpace(string(raw)), 10, 64); err == nil {
			s.last.Store(n)
		}
	}
	return s, nil
}

// Ready reports whether the edge caught up with the origin's log at least
// once since it started.
func (s *Subscriber) Ready() bool { return s.ready.Load() }

// WaitReady blocks until Ready or ctx ends.
func (s *Subscriber) WaitReady(ctx context.Context) error {
	select {
	case <-s.wake:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Last is the last event applied.
func (s *Subscriber) Last() uint64 { return s.last.Load() }

// Run follows the log until ctx ends, reconnecting with backoff. Each
// stream is held with one origin, a healthy one if any
// (origins.Pool.Next); when it breaks, the next stream goes to the next
// healthy origin, from the last applied event: the origins serve the same
// log, so nothing is lost, and an event at or before that position is not
// applied again. The backoff starts over after a healthy stream, one that
// caught up with the log (its Ready frame), so that an edge whose streams
// drop now and then follows purges again promptly each time.
func (s *Subscriber) Run(ctx context.Context) {
	backoff := minBackoff
	var cur *origins.Origin
	for ctx.Err() == nil {
		next := s.pool.Next(cur)
		if cur != nil && next != cur {
			slog.InfoContext(ctx, "edge follows the purge log of another origin", "from", cur.String(), "to", next.String(), "since", s.last.Load())
		}
		cur = next
		caughtUp, err := s.follow(ctx, cur)
		if ctx.Err() != nil {
			return
		}
		if caughtUp {
			backoff = minBackoff
		}
		slog.WarnContext(ctx, "edge lost the origin's purge stream; reconnecting", "origin", cur.String(), "error", err, "retry_in", backoff)
		select {
		case <-s.after(backoff):
		case <-ctx.Done():
			return
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

// follow holds one connection to origin o: events come down the response,
// acks go up the request body. caughtUp reports whether the stream reached
// a Ready frame.
func (s *Subscriber) follow(ctx context.Context, o *origins.Origin) (caughtUp bool, err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	pr, pw := io.Pipe()
	defer pw.Close()
	// On cancellation net/http waits for the goroutine writing the request
	// body before Do returns (golang/go#29246), and that goroutine waits
	// for the pipe: end the pipe with the context, or Do, follow and Run
	// would never return while the origin has not answered. (It also frees
	// an acknowledgement blocked on a connection that stopped reading.)
	stop := context.AfterFunc(ctx, func() { pw.CloseWithError(context.Cause(ctx)) })
	defer stop()
	q := url.Values{contract.StreamSince: {strconv.FormatUint(s.last.Load(), 10)}, contract.StreamName: {s.cfg.Name}}
	u := o.URL() + contract.StreamPath + "?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, pr)
	if err != nil {
		return false, err
	}
	req.Header.Set("Authorization", "Bearer "+s.cfg.Token)
	req.Header.Set("Content-Type", "text/plain")
	// The stream lasts as long as it can, but its answer must start in time.
	timer := time.AfterFunc(s.cfg.AnswerTimeout, func() { cancel(errNoAnswer) })
	attempt := s.pool.Begin(o)
	resp, err := s.cfg.Client.Do(req)
	// A stream that could not connect takes the origin out at once, as a
	// request does.
	attempt.Done(ctx, err)
	if !timer.Stop() { // the timeout struck, before the answer or as it came
		if err == nil {
			resp.Body.Close()
		}
		return false, fmt.Errorf("%w within %v", errNoAnswer, s.cfg.AnswerTimeout)
	}
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("origin answered %s", resp.Status)
	}
	// The origin sends a heartbeat every contract.HeartbeatInterval: a
	// stream that brings nothing for the silence timeout is dead, however
	// open its connection looks. The timer runs while waiting for a frame
	// and while an acknowledgement goes out (to an origin that stopped
	// reading, it would block), not while a frame is applied, so that a
	// long purge does not count.
	silence := time.AfterFunc(s.cfg.SilenceTimeout, func() { cancel(errSilent) })
	defer silence.Stop()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		if !silence.Stop() {
			break // struck as the frame came: the stream is canceled
		}
		seq, ack, err := s.frame(sc.Bytes(), &caughtUp)
		if err != nil {
			return caughtUp, err
		}
		silence.Reset(s.cfg.SilenceTimeout)
		if ack {
			if _, err := fmt.Fprintf(pw, "%d\n", seq); err != nil {
				return caughtUp, s.silentOr(ctx, err)
			}
		}
	}
	err = sc.Err()
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	return caughtUp, s.silentOr(ctx, err)
}

// silentOr returns err, or the silence that ended the stream (ctx's).
func (s *Subscriber) silentOr(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), errSilent) {
		return fmt.Errorf("%w for %v", errSilent, s.cfg.SilenceTimeout)
	}
	return err
}

// frame applies one frame of a stream and returns the event to
// acknowledge, if any; a Ready frame sets caughtUp.
func (s *Subscriber) frame(line []byte, caughtUp *bool) (seq uint64, ack bool, err error) {
	var ev contract.Event
	if err := json.Unmarshal(line, &ev); err != nil {
		return 0, false, fmt.Errorf("bad event: %w", err)
	}
	if ev.Kind == contract.Ready {
		*caughtUp = true
		if s.ready.CompareAndSwap(false, true) {
			close(s.wake)
		}
		return 0, false, nil
	}
	// An event at or before the position was applied already: from
	// another origin's stream, say, whose acknowledgement this one did
	// not see. A reset is the exception: its position may be below ours
	// (the log was restored) and it must be applied.
	if ev.Kind == contract.Reset || ev.Seq > s.last.Load() {
		if err := s.apply(ev.Kind, ev.IDs); err != nil {
			return 0, false, fmt.Errorf("apply event %d: %w", ev.Seq, err)
		}
		if err := s.remember(ev.Seq); err != nil {
			return 0, false, err
		}
	}
	return ev.Seq, true, nil
}

func (s *Subscriber) apply(kind string, ids []string) error {
	for _, id := range ids {
		var err error
		switch kind {
		case contract.ImagesDeleted:
			_, err = s.cfg.Purger.PurgeImage(id)
		case contract.OrgSuspended:
			_, err = s.cfg.Purger.PurgeOrg(id)
		case contract.KeyDisabled, contract.TagsPurged:
			_, err = s.cfg.Purger.PurgeTag(id)
		}
		if err != nil {
			return err
		}
	}
	if kind == contract.Reset {
		return s.cfg.Purger.PurgeAll()
	}
	return nil
}

// remember persists the position atomically.
func (s *Subscriber) remember(seq uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last.Store(seq)
	tmp := s.cfg.StateFile + ".tmp"
	if err := os.MkdirAll(filepath.Dir(tmp), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(tmp, []byte(strconv.FormatUint(seq, 10)+"\n"), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.cfg.StateFile)
}
