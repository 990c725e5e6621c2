package render

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pictorhq/pictor/origin/egress"
)

// InternalHost is the host name under which tabs load the documents and
// assets Pictor serves itself (HTML renders, emoji images). The egress
// answers it in-process; it never reaches DNS.
const InternalHost = "pictor.internal"

// Config configures the engine.
type Config struct {
	// Chromium is the browser binary; empty for DefaultChromium's choice.
	Chromium string
	// User is the system user Chromium runs as. Empty means this
	// process's own user, or, when that is root, DefaultUser (FallbackUser
	// when DefaultUser does not exist): Chromium's sandbox refuses root.
	User string
	// NoSandbox turns Chromium's sandbox off (--no-sandbox), for hosts
	// without user namespaces. It is the only way to run Chromium as root.
	NoSandbox bool
	// SiteIsolation gives each cross-site iframe a renderer process of its
	// own, as desktop Chrome does. It is off by default: every render
	// already has a browser context (and renderers) of its own, and on a
	// page with cross-site embeds isolation costs far more than the 10 %
	// of render time it was allowed (docs/decisions.md).
	SiteIsolation bool
	// Tabs is how many renders run at once.
	Tabs int
	// Queue is how many renders may wait for a tab; more get ErrQueueFull.
	Queue int
	// RecycleAfter restarts the browser after this many renders.
	RecycleAfter int
	// TabUses is how many renders of one organization a tab serves before
	// it is replaced by a fresh one.
	TabUses int
	// Timeout is the hard deadline of one render, queueing excluded.
	Timeout time.Duration
	// BusyLimit is how long a page's main thread may stay unanswering
	// (a script that never yields) before its render fails with
	// ErrPageBusy.
	BusyLimit time.Duration
	// AllowPrivate lets renders reach loopback and private networks.
	AllowPrivate bool
	// FontsURL is the base of the Google Fonts CSS API.
	FontsURL string
	// Gateway filters every request of every tab.
	Gateway *egress.Gateway
	// Registerer receives the engine's metrics; nil skips them.
	Registerer prometheus.Registerer
	// ProfileDir holds the browsers' profile directories, one per launch,
	// removed when the browser exits. Processes left by a crashed run are
	// found through it and killed at Start.
	ProfileDir string
	// RendererMemory bounds a renderer process's resident memory: one
	// that passes it is killed, and its render fails with ErrPageMemory.
	RendererMemory int64
	// MaxPDFBytes bounds a PDF: a larger one fails with ErrTooLarge.
	MaxPDFBytes int64
	// BrowserOutput, when set, receives Chromium's stdout and stderr.
	BrowserOutput interface{ Write([]byte) (int, error) }
	// Lazy leaves Chromium unlaunched until the first render needs it, as
	// after a browser is retired. Otherwise Start launches it and opens Tabs
	// tabs, and fails when it cannot: serve and origin do that. The API's
	// tests set it, since most of them never render.
	Lazy bool
}

// HeadlessShell is Debian's headless shell of its Chromium build (package
// chromium-headless-shell): the same engine without the browser's window,
// its compositor and its WebUI, which every navigation kept busy. Renders
// take about a third less CPU with it (docs/render-performance.md).
const HeadlessShell = "/usr/lib/chromium/chromium-headless-shell"

// DefaultChromium is the browser binary a render uses unless told: the
// headless shell when it is installed, else chromium from PATH. With site
// isolation, chromium: in the shell a cross-site frame's process sometimes
// had not drawn it yet when the page was captured (1 capture in 18 under
// load, none in the full browser).
func DefaultChromium(siteIsolation bool) string {
	if !siteIsolation {
		if _, err := os.Stat(HeadlessShell); err == nil {
			return HeadlessShell
		}
	}
	return "chromium"
}

// browserBinary is the binary the engine starts.
func (c *Config) browserBinary() string {
	if c.Chromium != "" {
		return c.Chromium
	}
	return DefaultChromium(c.SiteIsolation)
}

// DefaultConfig returns the defaults: a tab per CPU.
func DefaultConfig() Config {
	n := runtime.NumCPU()
	return Config{
		Tabs:         n,
		Queue:        64,
		RecycleAfter: 1000,
		TabUses:      100,
		Timeout:      60 * time.Second,
		// Chromium itself calls a page unresponsive after 15 s.
		BusyLimit: 10 * time.Second,
		// A tab's pages take 100-300 MB; a 64-megapixel jumbo capture
		// about 600 MB.
		RendererMemory: 1 << 30,
		MaxPDFBytes:    64 << 20,
		FontsURL:       "https://fonts.googleapis.com",
		ProfileDir:     filepath.Join(os.TempDir(), "pictor-chromium"),
	}
}

// RegisterFlags registers the settings an operator chooses on fs
// (--render-tabs, --render-queue, --fonts-url and the --chromium flags),
// each defaulting to its value in c: start from DefaultConfig.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.Tabs, "render-tabs", c.Tabs, "Chromium tabs rendering at once")
	fs.IntVar(&c.Queue, "render-queue", c.Queue, "renders that may wait for a tab before 503; one organization may hold at most half of them")
	fs.StringVar(&c.FontsURL, "fonts-url", c.FontsURL, "base URL of the Google Fonts CSS API")
	fs.StringVar(&c.Chromium, "chromium", c.Chromium, "Chromium binary (default: Debian's headless shell when installed, else chromium; chromium with --chromium-site-isolation)")
	fs.StringVar(&c.User, "chromium-user", c.User, "system user Chromium runs as when pictor runs as root (default pictor, or nobody when pictor does not exist)")
	fs.BoolVar(&c.NoSandbox, "chromium-no-sandbox", c.NoSandbox, "turn Chromium's sandbox off, for hosts without user namespaces (Chromium then runs as pictor's own user)")
	fs.BoolVar(&c.SiteIsolation, "chromium-site-isolation", c.SiteIsolation, "give each cross-site iframe a renderer process of its own (slower and more memory for pages with embeds)")
}

// Validate reports the first invalid setting.
func (c *Config) Validate() error {
	if c.Tabs < 1 || c.Tabs > 64 {
		return fmt.Errorf("render tabs %d: want 1 to 64", c.Tabs)
	}
	if c.Queue < 0 {
		return errors.New("render queue must not be negative")
	}
	if c.RecycleAfter < 1 || c.TabUses < 1 {
		return errors.New("render recycle counts must be positive")
	}
	if c.Timeout < time.Second {
		return fmt.Errorf("render timeout %v: want at least 1s", c.Timeout)
	}
	if c.BusyLimit < time.Second {
		return fmt.Errorf("render busy limit %v: want at least 1s", c.BusyLimit)
	}
	if c.ProfileDir == "" {
		return errors.New("render profile directory must not be empty")
	}
	if c.RendererMemory < 64<<20 {
		return fmt.Errorf("renderer memory %d: want at least 64 MiB", c.RendererMemory)
	}
	if c.MaxPDFBytes < 1<<20 {
		return fmt.Errorf("PDF limit %d: want at least 1 MiB", c.MaxPDFBytes)
	}
	if c.Gateway == nil {
		return errors.New("render needs an egress gateway")
	}
	u, err := url.Parse(c.FontsURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("fonts URL %q: want an absolute http(s) URL", c.FontsURL)
	}
	bin := c.browserBinary()
	if _, err := exec.LookPath(bin); err != nil {
		return fmt.Errorf("chromium %q: %w", bin, err)
	}
	if c.SiteIsolation && strings.Contains(filepath.Base(bin), "headless-shell") {
		// Not a slower render but a wrong one: a white frame served as the image.
		return fmt.Errorf("site isolation needs the full browser: the headless shell %q sometimes captures a cross-site frame before it is drawn", bin)
	}
	return nil
}
