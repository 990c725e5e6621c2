package ogpage

import (
	"errors"
	"fmt"
	"net/http"
)

// Why a fetch failed. Each error Fetch returns matches one of them (or
// context.Canceled when the caller's context was canceled); its text names
// the host and the reason, never an address the host resolves to, so that
// it can be shown to the site's owner.
var (
	// ErrInvalidRequest reports a Request that cannot be fetched: a URL
	// that is not absolute http(s) or carries credentials, a header name
	// or value that cannot be sent, an origin that is not one. It is the
	// caller's bug: OG configurations are validated before they are used.
	ErrInvalidRequest = errors.New("invalid source page request")
	// ErrBlocked reports a source page, or a redirect of it, that the
	// egress policy refuses: a loopback, private, link-local or cloud
	// metadata address (unless private addresses are allowed; metadata
	// never is), a scheme other than http and https, an invalid host. It is
	// the site owner's misconfiguration.
	ErrBlocked = errors.New("the source page's address is not allowed")
	// ErrUnreachable reports a source page that could not be loaded: its
	// name did not resolve, its host refused or reset the connection, the
	// TLS handshake failed, or it sent something that is not HTTP.
	ErrUnreachable = errors.New("the source page could not be reached")
	// ErrTimeout reports a source page that did not answer in full within
	// Config.Timeout or the caller's deadline (the error then also matches
	// context.DeadlineExceeded), or a connection to it that timed out.
	ErrTimeout = errors.New("the source page did not answer in time")
	// ErrTooManyRedirects reports a chain of more than Config.MaxRedirects
	// redirects.
	ErrTooManyRedirects = errors.New("the source page redirected too many times")
	// ErrNotHTML reports a source page whose Content-Type is neither
	// text/html nor application/xhtml+xml.
	ErrNotHTML = errors.New("the source page is not HTML")
	// ErrStatus reports a source page that answered with a status other
	// than 2xx (or 304 to a conditional request). Every *StatusError
	// matches it.
	ErrStatus = errors.New("the source page answered with an error status")
)

// StatusError is the site's own answer with a status other than 2xx: a
// 3xx that was not followed, a 4xx, a 5xx. An error page of the egress
// proxy is never one (it is ErrBlocked, ErrUnreachable or ErrTimeout).
type StatusError struct {
	// Status is the HTTP status of the answer.
	Status int
	// Host is the host:port (or host) that answered, after redirects.
	Host string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s: %s answered %d %s", ErrStatus, e.Host, e.Status, http.StatusText(e.Status))
}

// Unwrap lets errors.Is match ErrStatus.
func (e *StatusError) Unwrap() error { return ErrStatus }

// fetchError is a failure of one of the package's kinds. Its text is kind
// and a message safe to show; cause, when set, is reachable with errors.Is
// and errors.As (an *egress.AddressError, a TLS error, ...) but not shown.
type fetchError struct {
	kind  error
	msg   string
	cause error
}

func (e *fetchError) Error() string { return e.kind.Error() + ": " + e.msg }

func (e *fetchError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.kind}
	}
	return []error{e.kind, e.cause}
}

// failf returns an error of kind with a formatted message.
func failf(kind, cause error, format string, args ...any) error {
	return &fetchError{kind: kind, msg: fmt.Sprintf(format, args...), cause: cause}
}
