package render

import (
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/chromiumtest"
	"github.com/pictorhq/pictor/origin/egress"
)

// TestConfigValidate: the defaults are valid, and each bound refuses a
// value below it, naming the setting.
func TestConfigValidate(t *testing.T) {
	gw, err := egress.New(egress.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	valid := func() Config {
		c := DefaultConfig()
		c.Chromium, c.Gateway = chromiumtest.Path(), gw
		return c
	}
	c := valid()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, tt := range []struct {
		name    string
		change  func(*Config)
		mention string
	}{
		{"no tab", func(c *Config) { c.Tabs = 0 }, "tabs"},
		{"timeout under a second", func(c *Config) { c.Timeout = 500 * time.Millisecond }, "timeout"},
		{"busy limit under a second", func(c *Config) { c.BusyLimit = 500 * time.Millisecond }, "busy limit"},
		{"renderer memory under 64 MiB", func(c *Config) { c.RendererMemory = 32 << 20 }, "renderer memory"},
		{"PDF limit under 1 MiB", func(c *Config) { c.MaxPDFBytes = 1000 }, "PDF limit"},
		{"fonts URL not http", func(c *Config) { c.FontsURL = "ftp://fonts" }, "fonts URL"},
		{"site isolation in the headless shell", func(c *Config) { c.SiteIsolation, c.Chromium = true, HeadlessShell }, "site isolation"},
	} {
		c := valid()
		tt.change(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("%s: %v, want an error naming %q", tt.name, err, tt.mention)
		}
	}
}

// TestDefaultChromium: without a binary named, the engine starts the
// headless shell (make installs it), and the full browser when sites are
// isolated; a named binary is used as it is.
func TestDefaultChromium(t *testing.T) {
	for _, tc := range []struct {
		name      string
		chromium  string
		isolation bool
		want      string
	}{
		{"default", "", false, HeadlessShell},
		{"site isolation", "", true, "chromium"},
		{"named", "/opt/chrome/chrome", false, "/opt/chrome/chrome"},
		{"named, site isolation", HeadlessShell, true, HeadlessShell},
	} {
		c := DefaultConfig()
		c.Chromium, c.SiteIsolation = tc.chromium, tc.isolation
		if got := c.browserBinary(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
