package rendertest

import (
	"context"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/chromiumtest"
	"github.com/pictorhq/pictor/origin/egress"
	"github.com/pictorhq/pictor/origin/render"
)

// Stopped returns a real engine that was stopped before it started: its
// Render answers render.ErrStopped without launching a browser.
func Stopped(t testing.TB) *render.Engine {
	t.Helper()
	gc := egress.DefaultConfig()
	gc.DialTimeout = time.Second
	gw, err := egress.New(gc)
	if err != nil {
		t.Fatal(err)
	}
	rc := render.DefaultConfig()
	rc.Chromium = chromiumtest.Path()
	rc.NoSandbox = true
	rc.Tabs = 1
	rc.Gateway = gw
	rc.ProfileDir = t.TempDir()
	e, err := render.New(rc)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e
}
