package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
)

// The packages that fetch through a session (render, ogpage) tell their
// callers why a host could not be reached in the same words; the packages
// that reach hosts of their own (storage, blob) classify TLS failures the
// same way. What is shared lives here.

// Fault is what a failed request means for the host it asked for.
type Fault uint8

const (
	// FaultUnreachable: no valid answer came from the host.
	FaultUnreachable Fault = iota
	// FaultTimeout: the host did not answer in time.
	FaultTimeout
)

// DescribeNetwork words the failure err of a request relayed to hostport
// (host:port, or what stands for it) below HTTP: a lookup, a connection,
// an answer cut short. The text names the host asked for, never an
// address it resolved to; a failure it does not know "sent no valid
// answer".
func DescribeNetwork(hostport string, err error) (Fault, string) {
	switch {
	case errors.Is(err, ErrResolve):
		return FaultUnreachable, "could not resolve host " + Hostname(hostport)
	case errors.Is(err, syscall.ECONNREFUSED):
		return FaultUnreachable, "connection refused by " + hostport
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return FaultUnreachable, "connection reset by " + hostport
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return FaultUnreachable, "no route to " + hostport
	case errors.Is(err, context.DeadlineExceeded), os.IsTimeout(err):
		if errors.Is(err, ErrDial) {
			return FaultTimeout, "timed out connecting to " + hostport
		}
		return FaultTimeout, hostport + " did not answer in time"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return FaultUnreachable, hostport + " closed the connection without answering"
	case errors.Is(err, ErrDial):
		return FaultUnreachable, "could not connect to " + hostport
	}
	return FaultUnreachable, hostport + " sent no valid answer"
}

// Describe words the refusal for whoever asked for hostport: the range
// refused, never the address a name resolved to (the deployment's
// network is not the caller's business).
func (e *AddressError) Describe(hostport string) string {
	name := Hostname(hostport)
	if !e.Addr.IsValid() {
		return name + " is a " + e.Range
	}
	if _, err := netip.ParseAddr(strings.Trim(name, "[]")); err == nil {
		return name + " is a " + e.Range + " address"
	}
	return name + " resolves to a " + e.Range + " address"
}

// Hostname is the host of a host:port, an IPv6 address in brackets;
// anything else is returned as it is.
func Hostname(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		if strings.IndexByte(h, ':') >= 0 {
			return "[" + h + "]"
		}
		return h
	}
	return hostport
}

// TLSFault is why a TLS handshake with a host failed.
type TLSFault uint8

const (
	// NoTLSFault: the error is not a failed TLS handshake.
	NoTLSFault TLSFault = iota
	// UnknownAuthority: the certificate is not signed by a trusted
	// authority.
	UnknownAuthority
	// WrongHost: the certificate is not valid for the host name.
	WrongHost
	// InvalidCertificate: the certificate is expired or otherwise invalid.
	InvalidCertificate
	// Unverified: the certificate could not be verified otherwise.
	Unverified
	// NotTLS: the host does not speak TLS (it answered plain HTTP, say).
	NotTLS
	// HandshakeRefused: the host refused the handshake with an alert.
	HandshakeRefused
)

// TLSFaultOf says why err is a failed TLS handshake, the first cause in
// the order of the TLSFault values.
func TLSFaultOf(err error) TLSFault {
	switch {
	case has[x509.UnknownAuthorityError](err):
		return UnknownAuthority
	case has[x509.HostnameError](err):
		return WrongHost
	case has[x509.CertificateInvalidError](err):
		return InvalidCertificate
	case has[*tls.CertificateVerificationError](err):
		return Unverified
	case has[tls.RecordHeaderError](err):
		return NotTLS
	case has[tls.AlertError](err):
		return HandshakeRefused
	}
	return NoTLSFault
}

// has reports an error of type E in err's tree.
func has[E error](err error) bool {
	_, ok := errors.AsType[E](err)
	return ok
}
