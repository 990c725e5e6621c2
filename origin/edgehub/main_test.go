package edgehub_test

import (
	"os"
	"testing"

	"github.com/pictorhq/pictor/kv/pgkv/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}
