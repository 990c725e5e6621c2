package origin

import (
	"flag"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRegisterFlags: each flag serve and origin share lands in the
// component's config that uses it, and a flag not given keeps the
// component's default.
func TestRegisterFlags(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want func(c Config) bool
	}{
		{"defaults", nil, func(c Config) bool {
			d := DefaultConfig()
			return c.Render.Tabs == d.Render.Tabs && c.Render.FontsURL == d.Render.FontsURL && c.OG.Budget == d.OG.Budget && c.PreviewsPerMinute == 30 &&
				c.RenderLease == d.RenderLease && c.Storage.PartSize == d.Storage.PartSize && c.Blobs.Timeout == d.Blobs.Timeout
		}},
		{"render", []string{"--render-tabs", "3", "--render-queue", "7", "--fonts-url", "http://fonts.test", "--chromium", "/bin/true",
			"--chromium-user", "nobody", "--chromium-no-sandbox", "--chromium-site-isolation"}, func(c Config) bool {
			r := c.Render
			return r.Tabs == 3 && r.Queue == 7 && r.FontsURL == "http://fonts.test" && r.Chromium == "/bin/true" &&
				r.User == "nobody" && r.NoSandbox && r.SiteIsolation
		}},
		{"sandbox cache", []string{"--wasm-cache", "/tmp/wc"}, func(c Config) bool { return c.WASM.CompilationCacheDir == "/tmp/wc" }},
		{"OG budget", []string{"--og-render-budget", "5"}, func(c Config) bool { return c.OG.Budget == 5 }},
		{"previews", []string{"--previews-per-minute", "7"}, func(c Config) bool { return c.PreviewsPerMinute == 7 }},
		{"render lease", []string{"--render-lease", "2m"}, func(c Config) bool { return c.RenderLease == 2*time.Minute }},
		{"storage", []string{"--storage-part-size", "8388608"}, func(c Config) bool { return c.Storage.PartSize == 8<<20 }},
		{"blobs", []string{"--blobs", "file:///tmp/b", "--blobs-max-attempts", "5"}, func(c Config) bool {
			return c.Blobs.URL == "file:///tmp/b" && c.Blobs.MaxAttempts == 5
		}},
		{"origin", []string{"--data-dir", "/tmp/d", "--store", "postgres://h/db", "--public-url", "https://img.test", "--allow-private-urls", "--edge-token", "tok"},
			func(c Config) bool {
				return c.DataDir == "/tmp/d" && c.Store == "postgres://h/db" && c.PublicURL == "https://img.test" && c.AllowPrivateURLs && c.EdgeToken == "tok"
			}},
		{"request limits", []string{"--header-timeout", "3s", "--body-grace", "4s", "--body-min-rate", "100"}, func(c Config) bool {
			return c.HeaderTimeout == 3*time.Second && c.BodyGrace == 4*time.Second && c.BodyMinRate == 100
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			fs := flag.NewFlagSet("origin", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			c.RegisterFlags(fs)
			c.RegisterLimitFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			if !tt.want(c) {
				t.Fatalf("%v: config %+v", tt.args, c)
			}
		})
	}
}

// TestValidatePreviewsPerMinute: the previews' allowance is at least 1
// and at most images.MaxPreviewsPerMinute, named by its flag.
func TestValidatePreviewsPerMinute(t *testing.T) {
	for _, tt := range []struct {
		n  int
		ok bool
	}{{0, false}, {-1, false}, {1, true}, {30, true}, {10_000, true}, {10_001, false}} {
		t.Run(strconv.Itoa(tt.n), func(t *testing.T) {
			c := DefaultConfig()
			c.PreviewsPerMinute = tt.n
			err := c.Validate()
			if tt.ok != (err == nil) || (err != nil && !strings.Contains(err.Error(), "--previews-per-minute")) {
				t.Fatalf("%d: %v", tt.n, err)
			}
		})
	}
}
