package oauth

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/pictorhq/pictor/kv/storetest"
	"github.com/pictorhq/pictor/origin/perm"
)

// rotationEnvs are servers on one store, as origins sharing it run while
// their master key is replaced: each derives its seed from its current
// master key and the previous seeds from the others it holds. All share
// one issuer and one set of API keys.
func rotationEnvs(t *testing.T, seeds ...[2][]byte) []*env {
	t.Helper()
	stores := storetest.Pebble.Pair(t)
	var envs []*env
	for i, s := range seeds {
		e := newEnv(t, func(c *Config) {
			c.Store, c.Seed = stores[i%2], s[0]
			if s[1] != nil {
				c.PreviousSeeds = [][]byte{s[1]}
			}
			if len(envs) > 0 {
				c.Keys, c.Issuer, c.Resource = envs[0].keys, envs[0].cfg.Issuer, envs[0].cfg.Resource
			}
		})
		if len(envs) > 0 {
			e.keys = envs[0].keys
		}
		envs = append(envs, e)
	}
	return envs
}

func newSeed() []byte {
	s := make([]byte, ed25519.SeedSize)
	rand.Read(s)
	return s
}

// TestPreviousSeedsVerify: an access token signed under the old seed
// verifies on a server whose seed is new and whose previous seed is the
// old one, and on a server of the first phase (old seed, new one
// accepted) a token of the new seed verifies; a server of the new seed
// alone refuses the old token. JWKS lists the current key first, then the
// previous one.
func TestPreviousSeedsVerify(t *testing.T) {
	oldSeed, newSeed := newSeed(), newSeed()
	envs := rotationEnvs(t, [2][]byte{oldSeed, nil}, [2][]byte{oldSeed, newSeed}, [2][]byte{newSeed, oldSeed}, [2][]byte{newSeed, nil})
	oldOnly, phase1, phase2, newOnly := envs[0], envs[1], envs[2], envs[3]
	clientID := oldOnly.publicClient(t)
	oldAccess, _ := oldOnly.tokens(t, oldOnly.approve(t, clientID, "", perms("images:read"), "images:read"))
	newAccess, _ := phase2.tokens(t, oldOnly.approve(t, clientID, "", perms("images:read"), "images:read"))
	ctx := context.Background()
	tests := []struct {
		name   string
		srv    *env
		access string
		ok     bool
	}{
		{name: "old token, phase 1", srv: phase1, access: oldAccess, ok: true},
		{name: "old token, phase 2", srv: phase2, access: oldAccess, ok: true},
		{name: "new token, phase 1", srv: phase1, access: newAccess, ok: true},
		{name: "new token, new seed alone", srv: newOnly, access: newAccess, ok: true},
		{name: "old token, new seed alone", srv: newOnly, access: oldAccess, ok: false},
		{name: "new token, old seed alone", srv: oldOnly, access: newAccess, ok: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.srv.srv.Verify(ctx, tc.access)
			if tc.ok && err != nil {
				t.Fatalf("Verify = %v, want the token accepted", err)
			}
			if !tc.ok && !isInvalid(err, "unknown signing key or token type") {
				t.Fatalf("Verify = %v, want the unknown key refused", err)
			}
		})
	}
	var set struct{ Keys []jwk }
	a := phase2.get(t, phase2.browser(t), pathJWKS)
	if err := json.Unmarshal([]byte(a.body), &set); err != nil || len(set.Keys) != 2 ||
		set.Keys[0].Kid != phase2.srv.jwk.Kid || set.Keys[1].Kid != oldOnly.srv.jwk.Kid {
		t.Fatalf("JWKS of phase 2: %s (%v), want the new key then the old one", a.body, err)
	}
}

// TestPreviousSeedsConsent: a consent page served under the old seed is
// accepted by a server whose previous seed it is (an origin restarted
// with the new master key while the page was open), and refused by one
// of the new seed alone.
func TestPreviousSeedsConsent(t *testing.T) {
	oldSeed, newSeed := newSeed(), newSeed()
	envs := rotationEnvs(t, [2][]byte{oldSeed, nil}, [2][]byte{newSeed, oldSeed}, [2][]byte{newSeed, nil})
	oldOnly, phase2, newOnly := envs[0], envs[1], envs[2]
	clientID := oldOnly.publicClient(t)
	for _, tc := range []struct {
		name   string
		srv    *env
		status int
	}{
		{name: "phase 2", srv: phase2, status: http.StatusSeeOther},
		{name: "new seed alone", srv: newOnly, status: http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			apiID, apiKey := oldOnly.keys.add("key-"+tc.name, "org-1", perm.Grant{Permissions: perms("images:read")})
			_, challenge := pkce()
			browser := oldOnly.browser(t)
			consent := oldOnly.signIn(t, browser, authorizeQuery(clientID, testRedirect, challenge, ""), apiID, apiKey)
			if consent.status != http.StatusOK {
				t.Fatalf("sign in: status %d, body %s", consent.status, consent.body)
			}
			a := tc.srv.decide(t, browser, consent, "approve", "images:read")
			if a.status != tc.status {
				t.Fatalf("the old page's form on %s: status %d, want %d; body %s", tc.name, a.status, tc.status, a.body)
			}
			if tc.status == http.StatusSeeOther {
				if q := redirected(t, a, testRedirect); q.Get("code") == "" {
					t.Fatalf("approval redirect query %v", q)
				}
			}
		})
	}
}
