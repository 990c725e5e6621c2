package origin

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	"github.com/pictorhq/pictor/origin/api"
	"github.com/pictorhq/pictor/origin/mcpserver"
	"github.com/pictorhq/pictor/origin/oauth"
	"github.com/pictorhq/pictor/origin/seal"
)

// OAuthKeyFile is the OAuth signing key's file inside the data directory.
const OAuthKeyFile = "oauth-signing-key.pem"

// MCPPath is where the MCP endpoint is served, under the public URL.
const MCPPath = "/mcp"

// sweepEvery is how often expired OAuth codes, refresh tokens and grants
// are removed.
const sweepEvery = 10 * time.Minute

// openOAuth starts the authorization server of the MCP endpoint. Its
// issuer is the public URL, which must have no path: behind a path prefix
// the /.well-known documents cannot be at the host's root, and MCP is off.
func (o *Origin) openOAuth(box *seal.Box) error {
	pub := o.PublicURL()
	if u, err := url.Parse(pub); err != nil || (u.Path != "" && u.Path != "/") {
		slog.Warn("MCP endpoint off: OAuth needs a public URL without a path", "public_url", pub)
		return nil
	}
	cfg := oauth.DefaultConfig()
	cfg.Store, cfg.Keys, cfg.Now, cfg.Registerer = o.store, o.keys, o.cfg.Now, o.registry
	cfg.KeyFile = filepath.Join(o.cfg.DataDir, OAuthKeyFile)
	if o.cfg.Store != "" {
		// Origins sharing a store share the master key, not a data
		// directory: each derives the same signing key from it, so any
		// origin accepts the tokens and consent forms of the others.
		cfg.Seed = box.MACKey("oauth-signing-key")
		// While the master key is replaced, the other master keys'
		// signing keys still verify (their tokens and consent forms).
		cfg.PreviousSeeds = box.MACKeys("oauth-signing-key")[1:]
	}
	cfg.Issuer, cfg.Resource = pub, pub+MCPPath
	var err error
	o.oauth, err = oauth.New(cfg)
	return err
}

// openMCP builds the MCP endpoint over the router: every tool call runs as
// a request of the route table (api.WithCaller).
func (o *Origin) openMCP() error {
	if o.oauth == nil {
		return nil
	}
	mc := mcpserver.DefaultConfig()
	mc.API, mc.Verify, mc.Challenge = o.router, o.oauth.Verify, o.oauth.Challenge
	mc.IsInvalidToken = func(err error) bool { return errors.Is(err, oauth.ErrInvalidToken) }
	mc.Version, mc.Registerer = o.cfg.Version, o.registry
	var err error
	o.mcp, err = mcpserver.New(mc)
	return err
}

// oauthRoutes are the authorization server's endpoints and the MCP
// endpoint, public routes of the table: they authenticate by themselves.
func (o *Origin) oauthRoutes() []api.Route {
	if o.oauth == nil {
		return nil
	}
	routes := o.oauth.Routes()
	// The router exists only once the table is built: the MCP handler is
	// looked up when a request comes.
	serveMCP := func(w http.ResponseWriter, r *http.Request) {
		mcpCORS(w.Header())
		o.mcp.ServeHTTP(w, r)
	}
	const hidden = "the MCP endpoint: JSON-RPC over streamable HTTP, whose operations are MCP tools described by its own tools/list"
	for _, m := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		routes = append(routes, api.Route{Method: m, Pattern: MCPPath, Public: true, Handler: serveMCP, Hidden: hidden})
	}
	routes = append(routes, api.Route{Method: http.MethodOptions, Pattern: MCPPath, Public: true, Handler: mcpPreflight, Hidden: hidden + " (CORS preflight)"})
	return routes
}

// mcpCORS lets browser-based MCP clients (an inspector in a web page) call
// the endpoint: it holds no cookies and every request carries its bearer
// token, so any origin may, and may read the challenge of a 401.
func mcpCORS(h http.Header) {
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Expose-Headers", "WWW-Authenticate, Mcp-Session-Id, Mcp-Protocol-Version, X-Request-Id")
}

// mcpPreflight answers a CORS preflight of the MCP endpoint.
func mcpPreflight(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	mcpCORS(h)
	h.Set("Access-Control-Allow-Methods", "POST, GET, DELETE, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID, X-Request-Id")
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}

// MCPURL is the MCP endpoint's address, "" when it is off.
func (o *Origin) MCPURL() string {
	if o.oauth == nil {
		return ""
	}
	return o.PublicURL() + MCPPath
}

// sweepOAuth removes expired OAuth records every sweepEvery until ctx ends.
func (o *Origin) sweepOAuth(ctx context.Context, wg *sync.WaitGroup) {
	if o.oauth == nil {
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(sweepEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if n, err := o.oauth.Sweep(ctx, o.cfg.Now()); err != nil {
					slog.WarnContext(ctx, "sweep expired OAuth records", "error", err)
				} else if n > 0 {
					slog.DebugContext(ctx, "expired OAuth records removed", "records", n)
				}
			}
		}
	}()
}

// revokeConnections ends the OAuth connections a key approved, once it is
// disabled. (Verify also refuses them on their next call; this keeps them
// ended should the key be enabled again.) The hook that calls it also runs
// for an enabled key that can no longer sign URLs: its connections stay,
// narrowed by Verify to what the key holds now.
func (o *Origin) revokeConnections(ctx context.Context, apiID string) error {
	if o.oauth == nil {
		return nil
	}
	k, err := o.keys.ByAPIID(ctx, apiID)
	if err != nil {
		return err
	}
	if !k.Disabled {
		return nil
	}
	return o.oauth.RevokeKey(ctx, k.ID)
}
