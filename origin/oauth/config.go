package oauth

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/perm"
)

// Keys is what the authorization server needs of the API keys.
type Keys interface {
	auth.Authenticator // the consent page's sign-in
	// Principal returns key id's current principal: auth.ErrInvalid when the
	// key no longer exists, auth.ErrDisabled, auth.ErrSuspended.
	Principal(ctx context.Context, keyID string) (*auth.Principal, error)
}

// Limit is a token bucket: N events per Per on average, at most Burst at once.
type Limit struct {
	N     int
	Per   time.Duration
	Burst int
}

func (l Limit) validate(name string) error {
	if l.N <= 0 || l.Per <= 0 || l.Burst <= 0 {
		return fmt.Errorf("oauth: %s must allow a positive number of events per positive period with a positive burst, got %d per %v burst %d", name, l.N, l.Per, l.Burst)
	}
	return nil
}

// Config configures a Server.
type Config struct {
	// Store keeps clients, codes, grants and refresh tokens.
	Store kv.Store
	// KeyFile is the Ed25519 signing key (PKCS#8 PEM), generated with mode
	// 0600 on first start.
	KeyFile string
	// Seed, when set, is the 32-byte seed of the signing key instead of
	// KeyFile: several processes that share a store derive it from their
	// shared secret so that each accepts the others' tokens and forms.
	Seed []byte
	// PreviousSeeds are the seeds of signing keys that came before Seed
	// (derived from previous master keys while the master key is
	// replaced): access tokens they signed and consent forms made under
	// them are still accepted. Seed signs everything new.
	PreviousSeeds [][]byte
	// Issuer is the service's public base URL, e.g. "http://127.0.0.1:8080";
	// the endpoints hang under it. It has no path.
	Issuer string
	// Resource is the protected resource, e.g. "http://127.0.0.1:8080/mcp":
	// the audience of every access token.
	Resource string
	// Keys signs people in on the consent page and tells what a key holds now.
	Keys Keys
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Logger receives the server's logs; nil is slog.Default().
	Logger *slog.Logger
	// Registerer receives the server's metrics; nil skips them.
	Registerer prometheus.Registerer

	AccessTTL  time.Duration // access tokens
	RefreshTTL time.Duration // each refresh token, from its issue
	CodeTTL    time.Duration // authorization codes

	// ConsentFailures bounds failed sign-ins on the consent page, per client.
	ConsentFailures Limit
	// RegistrationsPerAddress bounds the dynamic client registrations of
	// one client address (contract.ClientKey: an IPv4 address, an IPv6 /64).
	RegistrationsPerAddress Limit
	// Registrations bounds the dynamic client registrations of all
	// addresses together: a ceiling far above one address's, so that many
	// addresses at once are bounded too.
	Registrations Limit
	// UnusedClientTTL is how long a registered client that has never
	// redeemed an authorization code is kept.
	UnusedClientTTL time.Duration
	// IdleClientTTL is how long a client that has redeemed a code is kept
	// after its last token request (code or refresh). It exceeds
	// RefreshTTL by more than an hour (clientUseEvery), so that a client
	// whose grant is alive is never removed.
	IdleClientTTL time.Duration
	// MaxUnfinishedClients bounds the clients that have never redeemed a
	// code kept at once, counted over the store (every origin sharing it
	// together): a registration past it removes the oldest of them, so
	// registering is never refused for it.
	MaxUnfinishedClients int
	// MaxUnfinishedClientsPerAddress bounds them per registering address
	// (contract.ClientKey): a registration past it removes that
	// address's oldest.
	MaxUnfinishedClientsPerAddress int
	// Scopes are the permissions a connection may be granted.
	Scopes []perm.Permission
}

// DefaultConfig returns the defaults; Store, KeyFile, Issuer, Resource and
// Keys remain to be set.
func DefaultConfig() Config {
	return Config{
		Now:                     time.Now,
		Logger:                  slog.Default(),
		AccessTTL:               10 * time.Minute,
		RefreshTTL:              30 * 24 * time.Hour,
		CodeTTL:                 60 * time.Second,
		ConsentFailures:         Limit{N: 5, Per: time.Minute, Burst: 5},
		RegistrationsPerAddress: Limit{N: 10, Per: time.Minute, Burst: 20},
		Registrations:           Limit{N: 600, Per: time.Minute, Burst: 600},
		UnusedClientTTL:         24 * time.Hour,
		IdleClientTTL:           90 * 24 * time.Hour,
		// A person registers and authorizes within minutes: a flood at
		// the registration ceiling (600 a minute per origin) takes more
		// than half an hour to push a registration out, and a network of
		// people connecting at once leaves far fewer than 100 unfinished.
		MaxUnfinishedClients:           20_000,
		MaxUnfinishedClientsPerAddress: 100,
		Scopes:                         defaultScopes(),
	}
}

// defaultScopes is every permission except api_keys:*: API keys cannot be
// managed over MCP.
func defaultScopes() []perm.Permission {
	var out []perm.Permission
	for _, p := range perm.All() {
		if !strings.HasPrefix(string(p), "api_keys:") {
			out = append(out, p)
		}
	}
	return out
}

// Validate reports the first field that cannot work.
func (c Config) Validate() error {
	if c.Store == nil {
		return errors.New("oauth: Store is required")
	}
	if c.Now == nil || c.Logger == nil {
		return errors.New("oauth: Now and Logger are required (DefaultConfig sets them)")
	}
	switch {
	case c.Seed != nil && len(c.Seed) != ed25519.SeedSize:
		return fmt.Errorf("oauth: Seed has %d bytes, want %d", len(c.Seed), ed25519.SeedSize)
	case c.Seed == nil && c.KeyFile == "":
		return errors.New("oauth: KeyFile or Seed is required")
	}
	for i, seed := range c.PreviousSeeds {
		if len(seed) != ed25519.SeedSize {
			return fmt.Errorf("oauth: PreviousSeeds[%d] has %d bytes, want %d", i, len(seed), ed25519.SeedSize)
		}
	}
	if c.Keys == nil {
		return errors.New("oauth: Keys is required")
	}
	if err := validateIssuer(c.Issuer); err != nil {
		return err
	}
	if err := validateResource(c.Resource); err != nil {
		return err
	}
	switch {
	case c.AccessTTL <= 0:
		return fmt.Errorf("oauth: AccessTTL %v must be positive", c.AccessTTL)
	case c.RefreshTTL < c.AccessTTL:
		return fmt.Errorf("oauth: RefreshTTL %v must be at least AccessTTL %v", c.RefreshTTL, c.AccessTTL)
	case c.CodeTTL <= 0 || c.CodeTTL > 10*time.Minute:
		return fmt.Errorf("oauth: CodeTTL %v must be positive and at most 10m", c.CodeTTL)
	}
	if err := c.ConsentFailures.validate("ConsentFailures"); err != nil {
		return err
	}
	if err := c.RegistrationsPerAddress.validate("RegistrationsPerAddress"); err != nil {
		return err
	}
	if err := c.Registrations.validate("Registrations"); err != nil {
		return err
	}
	switch {
	case c.UnusedClientTTL <= 0:
		return fmt.Errorf("oauth: UnusedClientTTL %v must be positive", c.UnusedClientTTL)
	case c.IdleClientTTL <= c.RefreshTTL+clientUseEvery:
		return fmt.Errorf("oauth: IdleClientTTL %v must exceed RefreshTTL %v by more than %v: a client with a live grant would be removed", c.IdleClientTTL, c.RefreshTTL, clientUseEvery)
	case c.MaxUnfinishedClients <= 0:
		return fmt.Errorf("oauth: MaxUnfinishedClients %d must be positive", c.MaxUnfinishedClients)
	case c.MaxUnfinishedClientsPerAddress <= 0 || c.MaxUnfinishedClientsPerAddress > c.MaxUnfinishedClients:
		return fmt.Errorf("oauth: MaxUnfinishedClientsPerAddress %d must be positive and at most MaxUnfinishedClients %d", c.MaxUnfinishedClientsPerAddress, c.MaxUnfinishedClients)
	}
	if len(c.Scopes) == 0 {
		return errors.New("oauth: Scopes must name at least one permission")
	}
	seen := map[perm.Permission]bool{}
	for _, p := range c.Scopes {
		if !perm.Valid(p) {
			return fmt.Errorf("oauth: Scopes: unknown permission %q", p)
		}
		if seen[p] {
			return fmt.Errorf("oauth: Scopes: %q is listed twice", p)
		}
		seen[p] = true
	}
	return nil
}

func validateIssuer(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("oauth: Issuer %q must be an absolute http or https URL", s)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.Contains(s, "#") || (u.Path != "" && u.Path != "/") {
		return fmt.Errorf("oauth: Issuer %q must be a scheme and host only (no path, query, fragment or user)", s)
	}
	return nil
}

func validateResource(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("oauth: Resource %q must be an absolute http or https URL", s)
	}
	if u.User != nil || u.RawQuery != "" || strings.Contains(s, "#") {
		return fmt.Errorf("oauth: Resource %q must have no query, fragment or user", s)
	}
	// The path becomes part of a route pattern (RFC 9728's metadata URL).
	for _, r := range u.EscapedPath() {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/-._~", r)) {
			return fmt.Errorf("oauth: Resource %q: its path may hold only letters, digits and /-._~", s)
		}
	}
	return nil
}
