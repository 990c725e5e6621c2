package oauth

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv/pebblekv"
)

func keyFileConfig(t *testing.T, path string) Config {
	t.Helper()
	store, err := pebblekv.Open(t.TempDir(), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cfg := DefaultConfig()
	cfg.Store = store
	cfg.KeyFile = path
	cfg.Issuer = "http://127.0.0.1:8080"
	cfg.Resource = "http://127.0.0.1:8080/mcp"
	cfg.Keys = newFakeKeys()
	return cfg
}

func TestKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "oauth.key")
	cfg := keyFileConfig(t, path)
	first, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", info.Mode().Perm())
	}
	raw, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(raw), "-----BEGIN PRIVATE KEY-----\n") {
		t.Errorf("key file is not PKCS#8 PEM:\n%s", raw)
	}
	second, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if first.jwk != second.jwk {
		t.Fatalf("the second start made another key: %v, %v", first.jwk, second.jwk)
	}
	after, _ := os.ReadFile(path)
	if string(after) != string(raw) {
		t.Error("the key file was rewritten")
	}
	// Consent pages of the first instance are good at the second.
	p := &pending{Step: stepSignIn, Expires: time.Now().Add(time.Minute).Unix(), CSRF: "c", ClientID: "x"}
	if got, err := second.open(first.seal(p), "c"); err != nil || got.ClientID != "x" {
		t.Errorf("second instance opens the first's state: %+v, %v", got, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("key directory holds %d entries, want the key alone", len(entries))
	}

	t.Run("corrupt", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "oauth.key")
		os.WriteFile(bad, []byte("not a key"), 0o600)
		if _, err := New(keyFileConfig(t, bad)); err == nil {
			t.Fatal("New accepted a corrupt key file")
		}
	})
}

// TestKeyFileConcurrentNew: processes starting at once on a fresh key path
// end up with one key.
func TestKeyFileConcurrentNew(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "oauth.key")
	cfg := keyFileConfig(t, path)
	const n = 16
	kids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			s, err := New(cfg)
			errs[i] = err
			if err == nil {
				kids[i] = s.jwk.Kid
			}
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if kids[i] != kids[0] {
			t.Fatalf("instance %d has key %s, instance 0 %s", i, kids[i], kids[0])
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want the key alone", names)
	}
}
