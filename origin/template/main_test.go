package template_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv/pgkv/pgtest"
	"github.com/pictorhq/pictor/wasm"
)

// engine is the sandbox every test shares: starting one compiles the
// guest, which takes seconds (far more under -race) unless wazero's
// compilation cache, kept between runs in the same directory as the wasm
// package's tests, already has it.
var engine *wasm.Engine

func TestMain(m *testing.M) {
	cfg := wasm.DefaultConfig()
	cfg.CompilationCacheDir = filepath.Join(os.TempDir(), "pictor-wasm-test-cache")
	cfg.PoolSize = 2
	// A busy machine must not make a save time out: no test here is
	// about the deadline.
	cfg.Timeout = time.Minute
	// The router's access log and the answers' debug lines are not what
	// these tests look at.
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	var err error
	if engine, err = wasm.New(context.Background(), cfg); err != nil {
		fmt.Fprintln(os.Stderr, "template sandbox:", err)
		os.Exit(1)
	}
	code := m.Run()
	engine.Close(context.Background())
	pgtest.StopShared()
	os.Exit(code)
}
