package resource

import (
	"context"
	"errors"
	"net"

	"github.com/pictorhq/pictor/origin/egress"
)

// NoLookup is the egress.Resolver of the address check a resource's save
// runs (a proxy's url, an OG configuration's base_url, a storage
// endpoint): it resolves nothing, so that address literals and local
// names the egress refuses are refused at once, without waiting on DNS,
// and names are left to the egress when they are used.
var NoLookup egress.Resolver = noLookup{}

type noLookup struct{}

func (noLookup) LookupIPAddr(context.Context, string) ([]net.IPAddr, error) {
	return nil, errors.New("not resolved when a resource is saved")
}
