package api

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/pictorhq/pictor/origin/contract/apierr"
)

// BodyRate is the slowest a request body may arrive. Counted from the
// moment the request's headers were read, a body must have delivered
// MinRate bytes for every second past Grace: by time t it has read at least
// MinRate × (t − Grace) bytes, so a body is never cut within Grace, and one
// that keeps MinRate from the start never at all. A body that falls behind
// gets 408 with the standard body and its connection is closed.
//
// It is enforced with read deadlines on the connection: a read that has to
// wait past the moment the body falls behind fails at that moment.
type BodyRate struct {
	Grace   time.Duration
	MinRate int64 // bytes per second
}

// Validate reports a rate that would bound nothing or cut every body.
func (b BodyRate) Validate() error {
	if b.Grace <= 0 || b.MinRate <= 0 || b.MinRate > 1<<30 {
		return fmt.Errorf("body rate: grace %v must be positive and the minimum rate %d B/s between 1 and 1 GiB/s", b.Grace, b.MinRate)
	}
	return nil
}

// Deadline is when a body that started at start and has delivered n bytes
// falls behind.
func (b BodyRate) Deadline(start time.Time, n int64) time.Time {
	whole, part := n/b.MinRate, n%b.MinRate
	if whole > 1<<32 { // a century and more: no deadline to speak of
		whole = 1 << 32
	}
	return start.Add(b.Grace + time.Duration(whole)*time.Second + time.Duration(part)*time.Second/time.Duration(b.MinRate))
}

// drainFloor is the least time the server gets to read what is left of a
// body after the answer (net/http reads up to 256 KiB of it to keep the
// connection): a handler that answered after a long render has its rule
// deadline behind it, while the rest of the body is usually in the
// socket already.
const drainFloor = time.Second

// rateBody is a request body held to a BodyRate. The handler's goroutine
// reads it; EnableFullDuplex (a body read alongside the answer, such as the
// edge purge channel's acknowledgements) exempts it, since such a body is
// a conversation paced by the server's own messages, not an upload.
type rateBody struct {
	io.ReadCloser
	rc     *http.ResponseController
	rate   BodyRate
	start  time.Time
	n      atomic.Int64
	done   atomic.Bool // EOF or an error: the connection is no business of ours any more
	exempt atomic.Bool
	slow   atomic.Bool // the body fell behind: the connection must close
}

func (b *rateBody) Read(p []byte) (int, error) {
	held := !b.exempt.Load() && !b.done.Load()
	if held {
		b.rc.SetReadDeadline(b.rate.Deadline(b.start, b.n.Load()))
	}
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	if err == nil {
		return n, nil
	}
	b.done.Store(true)
	var ne net.Error
	if held && errors.As(err, &ne) && ne.Timeout() {
		b.slow.Store(true)
		err = fmt.Errorf("%w: %d bytes in %v, less than %d B/s after %v: %w", apierr.ErrBodyTimeout,
			b.n.Load(), time.Since(b.start).Round(time.Millisecond), b.rate.MinRate, b.rate.Grace, err)
	}
	return n, err
}

// answering runs before the answer's header goes out: a body not read to
// its end gets a deadline for the server's own drain of it.
func (b *rateBody) answering(header http.Header) {
	if b.slow.Load() {
		header.Set("Connection", "close")
		return
	}
	if b.exempt.Load() || b.done.Load() {
		return
	}
	b.rc.SetReadDeadline(later(b.rate.Deadline(b.start, b.n.Load()), time.Now().Add(drainFloor)))
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
