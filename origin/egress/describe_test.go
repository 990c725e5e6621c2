package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"syscall"
	"testing"
)

func TestDescribeNetwork(t *testing.T) {
	tests := []struct {
		name  string
		host  string // example.com:443 if empty
		err   error
		fault Fault
		text  string
	}{
		{"resolve", "", fmt.Errorf("%w: no such host", ErrResolve), FaultUnreachable, "could not resolve host example.com"},
		{"resolve ipv6", "[2001:db8::1]:443", fmt.Errorf("%w: no such host", ErrResolve), FaultUnreachable, "could not resolve host [2001:db8::1]"},
		{"refused", "", fmt.Errorf("%w: %w", ErrDial, syscall.ECONNREFUSED), FaultUnreachable, "connection refused by example.com:443"},
		{"reset", "", syscall.ECONNRESET, FaultUnreachable, "connection reset by example.com:443"},
		{"broken pipe", "", syscall.EPIPE, FaultUnreachable, "connection reset by example.com:443"},
		{"no route", "", syscall.ENETUNREACH, FaultUnreachable, "no route to example.com:443"},
		{"dial timeout", "", fmt.Errorf("%w: %w", ErrDial, context.DeadlineExceeded), FaultTimeout, "timed out connecting to example.com:443"},
		{"answer timeout", "", os.ErrDeadlineExceeded, FaultTimeout, "example.com:443 did not answer in time"},
		{"cut short", "", fmt.Errorf("%w: %w", ErrUpstream, io.ErrUnexpectedEOF), FaultUnreachable, "example.com:443 closed the connection without answering"},
		{"dial", "", fmt.Errorf("%w: oops", ErrDial), FaultUnreachable, "could not connect to example.com:443"},
		{"other", "", errors.New("oops"), FaultUnreachable, "example.com:443 sent no valid answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := tt.host
			if host == "" {
				host = "example.com:443"
			}
			fault, text := DescribeNetwork(host, tt.err)
			if fault != tt.fault || text != tt.text {
				t.Errorf("DescribeNetwork = %v, %q; want %v, %q", fault, text, tt.fault, tt.text)
			}
		})
	}
}

func TestAddressErrorDescribe(t *testing.T) {
	tests := []struct {
		name     string
		hostport string
		err      *AddressError
		want     string
	}{
		{"by name", "localhost:80", &AddressError{Host: "localhost", Range: "loopback"}, "localhost is a loopback"},
		{"address", "10.0.0.1:80", &AddressError{Host: "10.0.0.1", Addr: netip.MustParseAddr("10.0.0.1"), Range: "private"}, "10.0.0.1 is a private address"},
		{"ipv6 address", "[::1]:80", &AddressError{Host: "::1", Addr: netip.MustParseAddr("::1"), Range: "loopback"}, "[::1] is a loopback address"},
		{"resolved name", "internal.example:443", &AddressError{Host: "internal.example", Addr: netip.MustParseAddr("192.168.1.2"), Range: "private"}, "internal.example resolves to a private address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Describe(tt.hostport); got != tt.want {
				t.Errorf("Describe(%q) = %q, want %q", tt.hostport, got, tt.want)
			}
		})
	}
}

func TestTLSFaultOf(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want TLSFault
	}{
		{"none", errors.New("oops"), NoTLSFault},
		{"nil", nil, NoTLSFault},
		{"unknown authority", fmt.Errorf("dial: %w", x509.UnknownAuthorityError{}), UnknownAuthority},
		{"host name", x509.HostnameError{Host: "example.com"}, WrongHost},
		{"invalid", x509.CertificateInvalidError{Reason: x509.Expired}, InvalidCertificate},
		{"verification", &tls.CertificateVerificationError{Err: errors.New("bad")}, Unverified},
		{"plain http", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, NotTLS},
		{"alert", tls.AlertError(40), HandshakeRefused},
		// The first in TLSFault's order wins.
		{"verification wrapping unknown authority", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, UnknownAuthority},
		{"alert and plain http", errors.Join(tls.AlertError(40), tls.RecordHeaderError{}), NotTLS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TLSFaultOf(tt.err); got != tt.want {
				t.Errorf("TLSFaultOf = %v, want %v", got, tt.want)
			}
		})
	}
}
