package oauth

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/perm"
)

// Server is the authorization server. Its methods named after endpoints are
// http.HandlerFuncs; Routes lists them as routes of the origin's table.
type Server struct {
	cfg          Config
	now          func() time.Time
	log          *slog.Logger
	issuer       string // without a trailing slash
	resourcePath string // the path of cfg.Resource, for RFC 9728's metadata URL

	key     ed25519.PrivateKey
	jwk     jwk
	sealer  cipher.AEAD // consent page state
	csrfKey []byte
	// The keys of Config.PreviousSeeds, which only verify and open: the
	// public keys by kid, and the consent page's keys.
	previousKeys    map[string]ed25519.PublicKey
	previousJWKs    []jwk
	previousSealers []cipher.AEAD
	previousCSRF    [][]byte

	scopes        []perm.Permission // cfg.Scopes, sorted
	registrations *rate.Limiter     // all addresses together
	registrants   *keyedLimiter     // registrations per client address
	failures      *keyedLimiter     // failed sign-ins per client

	evicted *prometheus.CounterVec // unfinished clients removed for a registration, by limit
}

// HKDF labels of the keys derived from the signing key's seed.
const (
	sealInfo = "pictor oauth consent state v1"
	csrfInfo = "pictor oauth csrf v1"
)

// New validates cfg and returns a Server, loading or creating its signing key.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var key ed25519.PrivateKey
	if cfg.Seed != nil {
		key = ed25519.NewKeyFromSeed(cfg.Seed)
	} else {
		var err error
		if key, err = loadKey(cfg.KeyFile); err != nil {
			return nil, fmt.Errorf("oauth: %w", err)
		}
	}
	sealer, csrfKey, err := consentKeys(key.Seed())
	if err != nil {
		return nil, err
	}
	resource, _ := url.Parse(cfg.Resource) // validated
	scopes := slices.Clone(cfg.Scopes)
	slices.Sort(scopes)
	s := &Server{
		cfg:           cfg,
		now:           cfg.Now,
		log:           cfg.Logger,
		issuer:        strings.TrimSuffix(cfg.Issuer, "/"),
		resourcePath:  strings.TrimSuffix(resource.EscapedPath(), "/"),
		key:           key,
		jwk:           publicJWK(key.Public().(ed25519.PublicKey)),
		sealer:        sealer,
		csrfKey:       csrfKey,
		scopes:        scopes,
		registrations: newLimiter(cfg.Registrations),
		registrants:   newKeyedLimiter(cfg.RegistrationsPerAddress),
		failures:      newKeyedLimiter(cfg.ConsentFailures),
		evicted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pictor_oauth_unfinished_clients_evicted_total",
			Help: "OAuth clients that had never redeemed a code, removed to make room for a registration, by the cap reached: address (per registering address) or total.",
		}, []string{"limit"}),
	}
	for _, seed := range cfg.PreviousSeeds {
		prev := ed25519.NewKeyFromSeed(seed)
		j := publicJWK(prev.Public().(ed25519.PublicKey))
		if j.Kid == s.jwk.Kid || s.previousKeys[j.Kid] != nil {
			continue
		}
		sealer, csrfKey, err := consentKeys(seed)
		if err != nil {
			return nil, err
		}
		if s.previousKeys == nil {
			s.previousKeys = map[string]ed25519.PublicKey{}
		}
		s.previousKeys[j.Kid] = prev.Public().(ed25519.PublicKey)
		s.previousJWKs = append(s.previousJWKs, j)
		s.previousSealers = append(s.previousSealers, sealer)
		s.previousCSRF = append(s.previousCSRF, csrfKey)
	}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(s.evicted); err != nil {
			return nil, fmt.Errorf("oauth: register metrics: %w", err)
		}
	}
	return s, nil
}

// consentKeys derives the consent page's keys from a signing key's seed,
// so every process sharing the key accepts the others' forms, across
// restarts too.
func consentKeys(seed []byte) (cipher.AEAD, []byte, error) {
	sealKey, err := hkdf.Key(sha256.New, seed, nil, sealInfo, 32)
	if err != nil {
		return nil, nil, fmt.Errorf("oauth: derive consent key: %w", err)
	}
	csrfKey, err := hkdf.Key(sha256.New, seed, nil, csrfInfo, 32)
	if err != nil {
		return nil, nil, fmt.Errorf("oauth: derive csrf key: %w", err)
	}
	block, err := aes.NewCipher(sealKey)
	if err != nil {
		return nil, nil, fmt.Errorf("oauth: consent key: %w", err)
	}
	sealer, err := cipher.NewGCM(block)
	if err != nil {
		return nil, nil, fmt.Errorf("oauth: consent key: %w", err)
	}
	return sealer, csrfKey, nil
}

// Endpoint paths.
const (
	pathProtectedResource   = "/.well-known/oauth-protected-resource"
	pathServerMetadata      = "/.well-known/oauth-authorization-server"
	pathOpenIDConfiguration = "/.well-known/openid-configuration"
	pathAuthorize           = "/oauth/authorize"
	pathToken               = "/oauth/token"
	pathRegister            = "/oauth/register"
	pathRevoke              = "/oauth/revoke"
	pathJWKS                = "/oauth/jwks"
)

// ResourceMetadataURL is the protected resource's metadata document (RFC
// 9728), named in every Bearer challenge.
func (s *Server) ResourceMetadataURL() string {
	return s.issuer + pathProtectedResource + s.resourcePath
}

// RevokeKey revokes for good every connection a key approved. The origin
// calls it when the key is disabled or deleted; Verify finds out by itself
// as well.
func (s *Server) RevokeKey(ctx context.Context, keyID string) error {
	if keyID == "" || strings.Contains(keyID, "/") {
		return nil
	}
	return s.revokeIndexed(ctx, prefixGrantKey+keyID+"/", "API key disabled or deleted")
}

// RevokeOrg revokes for good every connection of an organization. The
// origin calls it when the organization is suspended.
func (s *Server) RevokeOrg(ctx context.Context, orgID string) error {
	if orgID == "" || strings.Contains(orgID, "/") {
		return nil
	}
	return s.revokeIndexed(ctx, prefixGrantOrg+orgID+"/", "organization suspended")
}

// parseScopes reads a space-separated scope parameter. Every name must be one
// of the allowed scopes; the result is sorted and without duplicates.
func (s *Server) parseScopes(raw string) ([]perm.Permission, error) {
	var out []perm.Permission
	for _, name := range strings.Fields(raw) {
		p := perm.Permission(name)
		if _, ok := slices.BinarySearch(s.scopes, p); !ok {
			if !plainName(name) {
				return nil, errors.New("unknown or not allowed scope")
			}
			return nil, fmt.Errorf("unknown or not allowed scope %s", name)
		}
		out = append(out, p)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// within returns the permissions of want that g grants and that are allowed
// scopes, sorted.
func (s *Server) within(want []perm.Permission, g perm.Grant) []perm.Permission {
	var out []perm.Permission
	for _, p := range want {
		if _, ok := slices.BinarySearch(s.scopes, p); ok && g.Has(p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// plainName reports whether a name given by a client may be quoted back in
// an error_description (RFC 6749 allows only some printable ASCII there).
func plainName(name string) bool {
	if len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == ':' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func joinScopes(ps []perm.Permission) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = string(p)
	}
	return strings.Join(names, " ")
}

// RevokeOrg revokes for good every connection of an organization in store,
// as Server.RevokeOrg does, for a process that runs no authorization server
// (the admin command on a store no origin holds, or a shared one).
// Grants are cut with the default AccessTTL.
func RevokeOrg(ctx context.Context, store kv.Store, orgID string) error {
	cfg := DefaultConfig()
	cfg.Store = store
	s := &Server{cfg: cfg, now: time.Now, log: slog.Default()}
	return s.RevokeOrg(ctx, orgID)
}
