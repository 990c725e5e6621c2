package ogpage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"

	"github.com/pictorhq/pictor/origin/egress"
)

// classify turns a failed request or body read into one of the package's
// errors. host is the host asked for, replaced by the failing hop's when
// the error names it. parent is the caller's context, ctx the fetch's.
func (f *Fetcher) classify(parent, ctx context.Context, host string, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
			host = u.Host
		}
	}
	// Time first: once the fetch's context is done, any failure below it
	// (an egress answer to a canceled relay included) is its consequence.
	if perr := parent.Err(); perr != nil {
		if errors.Is(perr, context.DeadlineExceeded) {
			return failf(ErrTimeout, perr, "%s did not answer before the request's deadline", host)
		}
		return fmt.Errorf("ogpage: fetch of %s abandoned: %w", host, perr)
	}
	if ctx.Err() != nil {
		return failf(ErrTimeout, context.DeadlineExceeded, "%s did not answer within %v", host, f.cfg.Timeout)
	}
	var a *answered
	if errors.As(err, &a) {
		return classifyAnswer(a.f)
	}
	var fe *fetchError
	if errors.As(err, &fe) {
		return fe // from checkRedirect
	}
	if egress.TLSFaultOf(err) != egress.NoTLSFault {
		return failf(ErrUnreachable, err, "the TLS handshake with %s failed", host)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return failf(ErrTimeout, err, "%s did not answer in time", host)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return failf(ErrUnreachable, err, "%s closed the connection before its answer ended", host)
	}
	return failf(ErrUnreachable, err, "%s sent no valid answer", host)
}

// classifyAnswer says why the egress answered a request itself: its own
// refusal is ErrBlocked, a failed lookup, connection or upstream is
// ErrUnreachable or ErrTimeout. The text names the host asked for and the
// range refused, never the address a name resolved to.
func classifyAnswer(a egress.Failure) error {
	host := a.Authority()
	if host == "" {
		host = "the requested host"
	}
	var ae *egress.AddressError
	switch err := a.Err; {
	case err == nil:
		return failf(ErrUnreachable, nil, "the request for %s was not relayed", host)
	case errors.As(err, &ae):
		return failf(ErrBlocked, err, "%s", ae.Describe(host))
	case errors.Is(err, egress.ErrBlockedScheme):
		return failf(ErrBlocked, err, "%s may not be fetched", host)
	case errors.Is(err, egress.ErrInvalidHost):
		return failf(ErrBlocked, err, "%s is not a valid host", host)
	case errors.Is(err, egress.ErrClosed):
		return failf(ErrUnreachable, err, "the egress session closed")
	}
	fault, text := egress.DescribeNetwork(host, a.Err)
	if fault == egress.FaultTimeout {
		return failf(ErrTimeout, a.Err, "%s", text)
	}
	return failf(ErrUnreachable, a.Err, "%s", text)
}
