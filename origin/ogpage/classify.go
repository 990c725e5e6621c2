package ogpage

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"syscall"

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
	if isTLSFailure(err) {
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

// isTLSFailure reports a failed TLS handshake with the site: an invalid
// certificate, an alert, or a peer that does not speak TLS.
func isTLSFailure(err error) bool {
	var (
		verr *tls.CertificateVerificationError
		rerr tls.RecordHeaderError
		aerr tls.AlertError
		uerr x509.UnknownAuthorityError
		herr x509.HostnameError
		cerr x509.CertificateInvalidError
	)
	return errors.As(err, &verr) || errors.As(err, &rerr) || errors.As(err, &aerr) ||
		errors.As(err, &uerr) || errors.As(err, &herr) || errors.As(err, &cerr)
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
		name := hostname(host)
		if !ae.Addr.IsValid() {
			return failf(ErrBlocked, err, "%s is a %s", name, ae.Range)
		}
		if _, perr := netip.ParseAddr(strings.Trim(name, "[]")); perr == nil {
			return failf(ErrBlocked, err, "%s is a %s address", name, ae.Range)
		}
		return failf(ErrBlocked, err, "%s resolves to a %s address", name, ae.Range)
	case errors.Is(err, egress.ErrBlockedScheme):
		return failf(ErrBlocked, err, "%s may not be fetched", host)
	case errors.Is(err, egress.ErrInvalidHost):
		return failf(ErrBlocked, err, "%s is not a valid host", host)
	case errors.Is(err, egress.ErrClosed):
		return failf(ErrUnreachable, err, "the egress session closed")
	case errors.Is(err, egress.ErrResolve):
		return failf(ErrUnreachable, err, "could not resolve host %s", hostname(host))
	case errors.Is(err, syscall.ECONNREFUSED):
		return failf(ErrUnreachable, err, "connection refused by %s", host)
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return failf(ErrUnreachable, err, "connection reset by %s", host)
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return failf(ErrUnreachable, err, "no route to %s", host)
	case errors.Is(err, context.DeadlineExceeded), os.IsTimeout(err):
		if errors.Is(err, egress.ErrDial) {
			return failf(ErrTimeout, err, "timed out connecting to %s", host)
		}
		return failf(ErrTimeout, err, "%s did not answer in time", host)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return failf(ErrUnreachable, err, "%s closed the connection without answering", host)
	case errors.Is(err, egress.ErrDial):
		return failf(ErrUnreachable, err, "could not connect to %s", host)
	}
	return failf(ErrUnreachable, a.Err, "%s sent no valid answer", host)
}

// hostname is the host of a host:port.
func hostname(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		if strings.IndexByte(h, ':') >= 0 {
			return "[" + h + "]"
		}
		return h
	}
	return hostport
}
