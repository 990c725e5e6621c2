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
	// ErrClosed reports a request that arrived while its session closed.
	ErrClosed = errors.New("egress session closed")
)

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
