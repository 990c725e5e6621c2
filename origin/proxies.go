package origin

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/egress"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/proxy"
)

// proxyRoutes gives images their proxies: the check when an image is
// created, the route with its credentials when it is rendered.
type proxyRoutes struct{ store *proxy.Store }

// Check refuses a proxy_id the organization cannot use now: its plan has no
// delivery options (403), the proxy is not its (404) or is disabled (400).
func (p proxyRoutes) Check(ctx context.Context, o *org.Org, id string) error {
	if err := proxy.CheckPlan(o); err != nil {
		return err
	}
	px, err := p.store.Get(ctx, o.ID, id)
	if errors.Is(err, proxy.ErrNotFound) {
		return apierr.NotFound("Proxy %s not found", id)
	}
	if err != nil {
		return err
	}
	if px.Disabled {
		return apierr.Field("proxy_id", "proxy %s is disabled", id)
	}
	return nil
}

// Upstream is the route of a render through the proxy.
func (p proxyRoutes) Upstream(ctx context.Context, orgID, id string) (*egress.Upstream, error) {
	px, err := p.store.Get(ctx, orgID, id)
	if err != nil {
		if errors.Is(err, proxy.ErrNotFound) {
			return nil, errors.New("it was deleted")
		}
		return nil, err
	}
	if px.Disabled {
		return nil, errors.New("it is disabled")
	}
	user, pass, err := p.store.Credentials(px)
	if err != nil {
		return nil, fmt.Errorf("open its credentials: %w", err)
	}
	_, host, _ := strings.Cut(px.URL, "://")
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return &egress.Upstream{Host: host, Port: px.Port, Scheme: px.Scheme(), Username: user, Password: pass,
		Bypass: px.BypassHosts}, nil
}
