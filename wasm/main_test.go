package wasm

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// testCacheDir keeps wazero's compiled guest between test runs: the
// first compilation takes seconds (far more under -race).
var testCacheDir = filepath.Join(os.TempDir(), "pictor-wasm-test-cache")

func testConfig() Config {
	cfg := DefaultConfig()
	cfg.CompilationCacheDir = testCacheDir
	cfg.PoolSize = 2
	// This machine may be busy: tests that are not about the deadline
	// must not hit it.
	cfg.Timeout = time.Minute
	return cfg
}

var shared struct {
	once sync.Once
	e    *Engine
	err  error
}

// sharedEngine is one Engine with the default limits for the tests that
// do not change them.
func sharedEngine(t testing.TB) *Engine {
	t.Helper()
	shared.once.Do(func() { shared.e, shared.err = New(context.Background(), testConfig()) })
	if shared.err != nil {
		t.Fatalf("New: %v", shared.err)
	}
	return shared.e
}

// newEngine is an Engine of its own, closed when the test ends.
func newEngine(t testing.TB, edit func(*Config)) *Engine {
	t.Helper()
	cfg := testConfig()
	if edit != nil {
		edit(&cfg)
	}
	e, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return e
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.e != nil {
		shared.e.Close(context.Background())
	}
	os.Exit(code)
}
