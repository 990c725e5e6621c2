package origin_test

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin"
	"github.com/pictorhq/pictor/origin/admin"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/seal"
)

func TestAuthenticationFailures(t *testing.T) {
	o := startOrigin(t)
	disabled := o.createKey(t, o.Owner, map[string]any{"permissions": []string{"api_keys:read"}, "disabled": true})
	basic := func(s string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		name, header string
	}{
		{name: "missing"},
		{name: "bearer scheme", header: "Bearer " + o.Owner.APIKey},
		{name: "not base64", header: "Basic !!!!"},
		{name: "no colon", header: basic(o.Owner.APIID + o.Owner.APIKey)},
		{name: "empty secret", header: basic(o.Owner.APIID + ":")},
		{name: "empty user", header: basic(":" + o.Owner.APIKey)},
		{name: "wrong secret", header: basic(o.Owner.APIID + ":" + strings.Repeat("0", len(o.Owner.APIKey)))},
		{name: "unknown api_id", header: basic("0b6b7d0a-8f2e-4a8e-9a55-1c1f0b0e6a11:" + o.Owner.APIKey)},
		{name: "path id as user", header: basic(disabled.ID + ":" + disabled.APIKey)},
		{name: "disabled key", header: basic(disabled.APIID + ":" + disabled.APIKey)},
		{name: "huge header", header: "Basic " + strings.Repeat("A", 4096)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{}
			if tc.header != "" {
				h["Authorization"] = tc.header
			}
			r := o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Header: h})
			apitest.WantError(t, r, 401)
			if got := r.Header.Get("WWW-Authenticate"); got != `Basic realm="pictor"` {
				t.Fatalf("WWW-Authenticate = %q", got)
			}
		})
	}
}

func TestSuspendedOrganization(t *testing.T) {
	o := startOrigin(t)
	orgID, creds := o.newOrg(t.Context(), t, "basic")
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &creds}), 200)
	c, err := admin.Dial(o.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := c.SetSuspended(t.Context(), orgID, true); err != nil || !st.Suspended {
		t.Fatalf("suspend: %+v, %v", st, err)
	}
	apitest.WantMessage(t, apitest.WantError(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &creds}), 401), "suspended")
	// Other organizations are unaffected.
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &o.Owner}), 200)
	if _, err := c.SetSuspended(t.Context(), orgID, false); err != nil {
		t.Fatal(err)
	}
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &creds}), 200)
	if _, err := c.SetSuspended(t.Context(), "01a20000-0000-7000-8000-00000000dead", true); err == nil {
		t.Fatal("suspending an unknown organization succeeded")
	}
}

// TestSecretsEncryptedAtRest stops the origin and reads every byte of the
// store and data directory looking for a plaintext secret.
func TestSecretsEncryptedAtRest(t *testing.T) {
	o := startOrigin(t)
	k := o.createKey(t, o.Owner, map[string]any{"permissions": []string{}})
	if err := o.origin.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{k.APIKey, o.Owner.APIKey} {
		filepath.WalkDir(o.DataDir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, _ := os.ReadFile(path)
			if strings.Contains(string(b), secret) {
				t.Errorf("plaintext secret in %s", path)
			}
			return nil
		})
	}
	info, err := os.Stat(filepath.Join(o.DataDir, seal.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("master key mode %v, want 0600", info.Mode().Perm())
	}
	store, err := origin.OpenStore(o.DataDir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	it := store.Iterate(t.Context(), []byte("key/"), kv.IterOptions{})
	defer it.Close()
	n := 0
	for it.Next() {
		n++
		if strings.Contains(string(it.Value()), k.APIKey) {
			t.Fatal("key record holds the plaintext secret")
		}
	}
	if n != 2 {
		t.Fatalf("%d key records, want 2", n)
	}
}

func TestMasterKeyFromEnvironment(t *testing.T) {
	key := strings.Repeat("ab", 32)
	o := startOrigin(t, func(c *origin.Config) { c.MasterKey = key })
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &o.Owner}), 200)
	if _, err := os.Stat(filepath.Join(o.DataDir, seal.KeyFile)); !os.IsNotExist(err) {
		t.Fatalf("a master key file was written although PICTOR_MASTER_KEY is set: %v", err)
	}
	cfg := origin.DefaultConfig()
	cfg.DataDir, cfg.Addr, cfg.MasterKey = t.TempDir(), "127.0.0.1:0", "short"
	if _, err := origin.New(t.Context(), cfg); err == nil ||
		!strings.Contains(err.Error(), "PICTOR_MASTER_KEY") {
		t.Fatalf("bad master key: err = %v", err)
	}
}

func TestAdminEndpointFile(t *testing.T) {
	o := startOrigin(t)
	info, err := os.Stat(filepath.Join(o.DataDir, admin.EndpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("admin endpoint file mode %v, want 0600", info.Mode().Perm())
	}
	// A forged token is refused.
	raw, _ := os.ReadFile(filepath.Join(o.DataDir, admin.EndpointFile))
	forged := strings.Replace(string(raw), `"token":"`, `"token":"x`, 1)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, admin.EndpointFile), []byte(forged), 0o600)
	c, err := admin.Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateOrg(t.Context(), "evil", "scale"); err == nil {
		t.Fatal("admin endpoint accepted a forged token")
	}
	// Creating with an unknown plan is the operator's error, reported as such.
	c, _ = admin.Dial(o.DataDir)
	if _, err := c.CreateOrg(t.Context(), "x", "platinum"); err == nil || !strings.Contains(err.Error(), "unknown plan") {
		t.Fatalf("unknown plan: err = %v", err)
	}
}
