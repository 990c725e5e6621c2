package render

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/pictorhq/pictor/origin/egress"
)

// classify turns a failure into one of the package's errors. It is the one
// place that decides what a failed main document is: its text is what the
// caller sees, so it names the cause and the host asked for, never an
// address of Pictor's own.
func classify(ctx context.Context, err error) error {
	var le *loadError
	if errors.As(err, &le) {
		return le.classify()
	}
	for _, target := range []error{ErrSelectorNotFound, ErrInvalidSelector, ErrNotReady, ErrBlockedURL, ErrTooLarge, ErrEmpty, ErrUnreachable, ErrTimeout, ErrPageBusy} {
		if errors.Is(err, target) {
			return err
		}
	}
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %v", ErrTimeout, err)
	}
	return fmt.Errorf("%w: %v", ErrBrowser, err)
}

// classify says why the main document did not load: ErrBlockedURL for a
// target the egress refused, ErrTimeout for one that did not answer in
// time, ErrBrowser when the egress itself failed, and ErrUnreachable for
// the rest.
func (e *loadError) classify() error {
	if a := e.answer; a != nil {
		return classifyAnswer(a)
	}
	// The host only: the URL's path and query may hold what the caller
	// would not show to whoever has the image's address.
	host := "the site"
	if u, err := url.Parse(e.url); err == nil && u.Host != "" {
		host = u.Host
	}
	code := strings.TrimPrefix(e.errorText, "net::")
	switch {
	case code == "ERR_PROXY_CONNECTION_FAILED":
		return fmt.Errorf("%w: the egress proxy could not be reached", ErrBrowser)
	case code == "ERR_NAME_NOT_RESOLVED":
		return fmt.Errorf("%w: could not resolve host %s", ErrUnreachable, egress.Hostname(host))
	case code == "ERR_CONNECTION_REFUSED":
		return fmt.Errorf("%w: connection refused by %s", ErrUnreachable, host)
	case code == "ERR_CONNECTION_RESET":
		return fmt.Errorf("%w: connection reset by %s", ErrUnreachable, host)
	case code == "ERR_CONNECTION_CLOSED", code == "ERR_EMPTY_RESPONSE":
		return fmt.Errorf("%w: %s closed the connection without answering", ErrUnreachable, host)
	case code == "ERR_TIMED_OUT", code == "ERR_CONNECTION_TIMED_OUT":
		return fmt.Errorf("%w: %s did not answer in time", ErrTimeout, host)
	case code == "ERR_TUNNEL_CONNECTION_FAILED":
		return fmt.Errorf("%w: could not connect to %s", ErrUnreachable, host)
	case strings.HasPrefix(code, "ERR_CERT_"):
		return fmt.Errorf("%w: the TLS certificate of %s is not valid (%s)", ErrUnreachable, host, e.errorText)
	case strings.HasPrefix(code, "ERR_SSL_"), strings.Contains(code, "_TLS_"):
		return fmt.Errorf("%w: the TLS handshake with %s failed (%s)", ErrUnreachable, host, e.errorText)
	case code == "":
		return fmt.Errorf("%w: %s could not be loaded", ErrUnreachable, host)
	}
	return fmt.Errorf("%w: %s could not be loaded (%s)", ErrUnreachable, host, e.errorText)
}

// classifyAnswer says why the egress answered a main document itself.
func classifyAnswer(a *egress.Failure) error {
	host := a.Authority()
	if host == "" {
		host = "the requested host"
	}
	var ae *egress.AddressError
	var pe *egress.ProxyError
	switch err := a.Err; {
	case errors.As(err, &pe):
		// First: a proxy's failure can also match the address, refusal
		// and timeout cases below, which would blame the site.
		return fmt.Errorf("%w: could not reach %s through proxy %s: %s", ErrUnreachable, egress.Hostname(host), pe.Proxy, pe.Reason)
	case err == nil:
		return fmt.Errorf("%w: the request for %s was not relayed", ErrUnreachable, host)
	case errors.Is(err, egress.ErrClosed):
		return fmt.Errorf("%w: the egress session closed", ErrBrowser)
	case errors.As(err, &ae):
		return fmt.Errorf("%w: %s", ErrBlockedURL, ae.Describe(host))
	case errors.Is(err, egress.ErrBlockedScheme):
		if a.Connect {
			return fmt.Errorf("%w: %s is not served over https", ErrBlockedURL, host)
		}
		return fmt.Errorf("%w: %s is not served to renders", ErrBlockedURL, host)
	case errors.Is(err, egress.ErrInvalidHost):
		if a.Host == "" {
			return fmt.Errorf("%w: its host is not valid", ErrBlockedURL)
		}
		return fmt.Errorf("%w: %s is not a valid host", ErrBlockedURL, host)
	case errors.Is(err, egress.ErrNotServed):
		return fmt.Errorf("%w: %s serves no such document", ErrBlockedURL, egress.Hostname(host))
	}
	fault, text := egress.DescribeNetwork(host, a.Err)
	if fault == egress.FaultTimeout {
		return fmt.Errorf("%w: %s", ErrTimeout, text)
	}
	return fmt.Errorf("%w: %s", ErrUnreachable, text)
}
