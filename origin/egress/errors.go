package egress

import (
	"errors"
	"fmt"
	"net/netip"
)

var (
	// ErrBlockedAddress reports a host that is, or resolves to, an address
	// outside the public internet. Every *AddressError matches it.
	ErrBlockedAddress = errors.New("address not allowed")
	// ErrCloudMetadata reports a cloud metadata address or host name; those
	// stay blocked even when private addresses are allowed. It always comes
	// with ErrBlockedAddress.
	ErrCloudMetadata = errors.New("cloud metadata endpoint")
	// ErrBlockedScheme reports a request that is neither an absolute-form
	// http:// request nor a CONNECT, or a CONNECT to the internal host.
	ErrBlockedScheme = errors.New("scheme not allowed")
	// ErrInvalidHost reports a host or port that cannot be parsed.
	ErrInvalidHost = errors.New("invalid host")
	// ErrResolve reports a failed or empty name lookup.
	ErrResolve = errors.New("cannot resolve host")
	// ErrDial reports that no checked address of a host accepted a
	// connection.
	ErrDial = errors.New("cannot connect")
	// ErrUpstream reports a relayed request whose upstream failed after the
	// connection was made: reset, closed or timed out before its answer, or
	// answered with something that is not HTTP.
	ErrUpstream = errors.New("upstream failed")
	// ErrNotServed reports an error answer of the internal host: it holds no
	// such document.
	ErrNotServed = errors.New("not served by the internal host")
	// ErrClosed reports a request that arrived while its session closed,
	// or that was cut because Session.SetUpstream changed its route.
	ErrClosed = errors.New("egress session closed")
	// ErrPeerLookup reports that the kernel does not say who holds the
	// sockets that connect to a session (NETLINK_SOCK_DIAG), so that no
	// Peer rule but AnyPeer can be applied: Gateway.Open fails with it.
	ErrPeerLookup = errors.New("cannot look up the sockets connecting to a session")
	// errNoAnswer reports a peer lookup the kernel did not answer as
	// asked.
	errNoAnswer = errors.New("sock_diag: malformed answer")

	// ErrInvalidUpstream reports an Upstream that Validate refuses.
	ErrInvalidUpstream = errors.New("invalid upstream proxy")
	// ErrProxyBlocked reports an upstream proxy whose host is, or resolves
	// to, an address the policy refuses; the *AddressError comes with it.
	ErrProxyBlocked = errors.New("upstream proxy address not allowed")
	// ErrProxyUnreachable reports an upstream proxy that could not be
	// reached: its name did not resolve, it refused the connection or did
	// not accept it in time, or the TLS handshake with it failed.
	ErrProxyUnreachable = errors.New("upstream proxy unreachable")
	// ErrProxyAuth reports an upstream proxy that refused the credentials
	// (407, or 401 to a CONNECT), or asked for some when the Upstream has
	// none.
	ErrProxyAuth = errors.New("upstream proxy refused the credentials")
	// ErrProxyFailed reports an upstream proxy that was reached but failed
	// the request: it answered a CONNECT with an error status (403, 502,
	// ...), or closed the connection, timed out or sent no valid answer.
	ErrProxyFailed = errors.New("upstream proxy failed the request")
)

// ProxyError reports a request that failed because of the session's
// upstream proxy. It matches one of ErrProxyBlocked, ErrProxyUnreachable,
// ErrProxyAuth and ErrProxyFailed, and the network error or *AddressError
// below it. It never holds the credentials.
type ProxyError struct {
	// Proxy is the upstream as host:port, the host as configured.
	Proxy string
	// Reason says what went wrong in words fit for the caller, without an
	// address the proxy's name resolved to: "proxy refused the
	// credentials (407)", "proxy refused the connection", ...
	Reason string
	// Status is the proxy's answer, 0 when it gave none.
	Status int
	// Kind is the sentinel the error matches.
	Kind error
	// Err is the cause, nil when the proxy's status says it all.
	Err error
}

func (e *ProxyError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("upstream proxy %s: %s", e.Proxy, e.Reason)
	}
	return fmt.Sprintf("upstream proxy %s: %s: %v", e.Proxy, e.Reason, e.Err)
}

// Unwrap lets errors.Is match Kind and the cause.
func (e *ProxyError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// AddressError reports a host refused because of what it names or resolves
// to. It matches ErrBlockedAddress, and ErrCloudMetadata when Metadata is set.
type AddressError struct {
	// Host is the host as requested.
	Host string
	// Addr is the refused address; it is invalid when the host was refused
	// by name (localhost, metadata.google.internal, ...).
	Addr netip.Addr
	// Range names the refused range: "loopback", "private", "cgnat", ...
	Range string
	// Metadata is set for cloud metadata addresses and names.
	Metadata bool
}

func (e *AddressError) Error() string {
	if !e.Addr.IsValid() {
		return fmt.Sprintf("host %q: %s: %s", e.Host, ErrBlockedAddress, e.Range)
	}
	return fmt.Sprintf("host %q: %s: %s is %s", e.Host, ErrBlockedAddress, e.Addr, e.Range)
}

// Unwrap lets errors.Is match ErrBlockedAddress and ErrCloudMetadata.
func (e *AddressError) Unwrap() []error {
	if e.Metadata {
		return []error{ErrBlockedAddress, ErrCloudMetadata}
	}
	return []error{ErrBlockedAddress}
}
