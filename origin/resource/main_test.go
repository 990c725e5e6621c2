package resource_test

import (
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/pictorhq/pictor/kv/pgkv/pgtest"
)

func TestMain(m *testing.M) {
	// The error answers' log lines are not what these tests look at.
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}
