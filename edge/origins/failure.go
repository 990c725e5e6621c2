package origins

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
)

// Failure is why a request got no answer from an origin, as far as it
// tells whether the request may be sent to another.
type Failure int

const (
	// NoFailure: the origin answered.
	NoFailure Failure = iota
	// Canceled: the request's context ended; nothing is known of the
	// origin, and nothing is sent again.
	Canceled
	// ConnectFailed: no connection could be made (refused, unreachable,
	// timed out). Nothing of the request reached the origin: any request
	// may go to another. The origin is taken out at once.
	ConnectFailed
	// ConnectionReset: the origin reset the connection before its answer
	// began. It may have begun to act on the request. The origin is taken
	// out at once.
	ConnectionReset
	// ConnectionClosed: the connection ended (EOF, or a write into a
	// connection the origin closed) before the answer began, as when an
	// origin stops, or closes a keep-alive connection just as the request
	// is sent on it. It may have begun to act on the request. Not enough to
	// take the origin out: the health checks decide.
	ConnectionClosed
	// OtherFailure: anything else (a malformed answer, a TLS failure, ...).
	OtherFailure
)

func (f Failure) String() string {
	switch f {
	case NoFailure:
		return "none"
	case Canceled:
		return "canceled"
	case ConnectFailed:
		return "connect failed"
	case ConnectionReset:
		return "connection reset"
	case ConnectionClosed:
		return "connection closed"
	}
	return "other"
}

// Classify tells why a request sent with net/http failed.
func Classify(err error) Failure {
	var op *net.OpError
	switch {
	case err == nil:
		return NoFailure
	case errors.As(err, &op) && op.Op == "dial":
		// Before the context test: a dial's own timeout also "is"
		// context.DeadlineExceeded.
		return ConnectFailed
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return Canceled
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED):
		return ConnectionReset
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.EPIPE):
		return ConnectionClosed
	}
	return OtherFailure
}

// Unsent allows a retry of any request, whatever its method and body:
// only when nothing of it reached the origin.
func Unsent(f Failure) bool { return f == ConnectFailed }

// Idempotent allows a retry of a request that may be sent twice (GET,
// HEAD, with no body or one that can be sent again): also when the
// connection broke before the answer began.
func Idempotent(f Failure) bool {
	return f == ConnectFailed || f == ConnectionReset || f == ConnectionClosed
}
