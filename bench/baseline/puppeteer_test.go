package baseline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseReady(t *testing.T) {
	tests := []struct {
		name, line string
		pid        int
		version    string
		ok         bool
	}{
		{"ready", "ready 4242 Chrome/156.0.8078.108", 4242, "Chrome/156.0.8078.108", true},
		{"no version", "ready 4242", 0, "", false},
		{"bad pid", "ready x Chrome/1", 0, "", false},
		{"zero pid", "ready 0 Chrome/1", 0, "", false},
		{"a stray line", "Error: Cannot find module 'puppeteer-core'", 0, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pid, version, err := parseReady(tt.line)
			if (err == nil) != tt.ok || pid != tt.pid || version != tt.version {
				t.Fatalf("parseReady(%q) = %d, %q, %v; want %d, %q, ok %v", tt.line, pid, version, err, tt.pid, tt.version, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrPuppeteer) {
				t.Fatalf("error %v is not ErrPuppeteer", err)
			}
		})
	}
}

func TestParseReply(t *testing.T) {
	tests := []struct {
		name, line string
		want       reply
		ok         bool
	}{
		{"a render", "ok 7 219.125 1871807 2400 1260",
			reply{id: 7, shot: Shot{Elapsed: 219125 * time.Microsecond, Bytes: 1871807, Width: 2400, Height: 1260}}, true},
		{"a failure", "error 8 Protocol error (Page.captureScreenshot): Target closed",
			reply{id: 8, failure: "Protocol error (Page.captureScreenshot): Target closed"}, true},
		{"a failure without a message", "error 9", reply{id: 9, failure: "failed without a message"}, true},
		{"missing fields", "ok 7 219.1 1871807 2400", reply{}, false},
		{"negative time", "ok 7 -1 10 2400 1260", reply{}, false},
		{"bad size", "ok 7 1 10 wide 1260", reply{}, false},
		{"bad id", "ok x 1 10 2400 1260", reply{}, false},
		{"unknown verb", "done 7 1 10 2400 1260", reply{}, false},
		{"empty", "", reply{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseReply(tt.line)
			if (err == nil) != tt.ok || got != tt.want {
				t.Fatalf("parseReply(%q) = %+v, %v; want %+v, ok %v", tt.line, got, err, tt.want, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrPuppeteer) {
				t.Fatalf("error %v is not ErrPuppeteer", err)
			}
		})
	}
}

func TestIsBrowserCommand(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want bool
	}{
		{"chromedp's browser", []string{"/usr/lib/chromium/chromium", "--headless", "--remote-debugging-pipe"}, true},
		{"over a port", []string{"chromium", "--remote-debugging-port=0"}, true},
		{"a renderer", []string{"/usr/lib/chromium/chromium", "--type=renderer", "--remote-debugging-pipe"}, false},
		{"crashpad", []string{"/usr/lib/chromium/chrome_crashpad_handler", "--monitor-self"}, false},
		{"a browser nobody drives", []string{"chromium", "--headless"}, false},
		{"empty", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsBrowserCommand(tt.args); got != tt.want {
				t.Fatalf("IsBrowserCommand(%q) = %v, want %v", tt.args, got, tt.want)
			}
		})
	}
}

func TestPageFlags(t *testing.T) {
	pictors := []string{"/usr/lib/chromium/chromium", "--enable-gpu-rasterization", "--load-extension=", "about:blank",
		"--headless", "--disable-features=Translate,PaintHolding", "--user-data-dir=/tmp/pictor-chromium-1/browser-2",
		"--font-render-hinting=none", "--remote-debugging-pipe"}
	kept := []string{"--enable-gpu-rasterization", "--load-extension=", "--headless", "--disable-features=Translate,PaintHolding",
		"--font-render-hinting=none"}
	tests := []struct {
		name    string
		browser []string
		asRoot  bool
		want    []string
	}{
		{"as another user", pictors, false, kept},
		{"as root", pictors, true, append(slices.Clone(kept), "--no-sandbox")},
		{"no sandbox already", []string{"chromium", "--no-sandbox", "--remote-debugging-port=0"}, true, []string{"--no-sandbox"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PageFlags(tt.browser, tt.asRoot); !slices.Equal(got, tt.want) {
				t.Fatalf("PageFlags = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestPinnedVersion checks the package pins puppeteer-core exactly, at
// PuppeteerVersion, and the lockfile installs that version.
func TestPinnedVersion(t *testing.T) {
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	b, err := puppeteerFiles.ReadFile("puppeteer/package.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	if got := pkg.Dependencies["puppeteer-core"]; got != PuppeteerVersion {
		t.Fatalf("package.json depends on puppeteer-core %q, want exactly %s", got, PuppeteerVersion)
	}
	var lock struct {
		Packages map[string]struct {
			Version   string `json:"version"`
			Integrity string `json:"integrity"`
		} `json:"packages"`
	}
	if b, err = puppeteerFiles.ReadFile("puppeteer/package-lock.json"); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &lock); err != nil {
		t.Fatal(err)
	}
	if got := lock.Packages["node_modules/puppeteer-core"]; got.Version != PuppeteerVersion || got.Integrity == "" {
		t.Fatalf("package-lock.json has puppeteer-core %+v, want %s with its integrity", got, PuppeteerVersion)
	}
}

// fakeNode writes a shell script standing in for render.mjs, run by
// /bin/sh in place of node: the process side of Puppeteer without Node
// or Chromium.
func fakeNode(t *testing.T, script string) PuppeteerConfig {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, puppeteerScript), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return PuppeteerConfig{Node: "/bin/sh", Dir: dir, Chromium: "chromium", Profile: filepath.Join(dir, "profile"), Pages: 2,
		Width: 1200, Height: 630, Scale: 2}
}

// echoRenders answers a request whose html is "n<number>" with the number
// as the PNG's length, so that a reply reaching the wrong request shows. A
// request whose html is "fail" fails; one whose html is "garble" gets an
// unreadable answer.
const echoRenders = `echo "ready 1 Chrome/156"
while read -r line; do
	id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
	case "$line" in
	*'"html":"fail"'*) echo "error $id page crashed" ;;
	*'"html":"garble"'*) echo "ok $id" ;;
	*) n=$(printf '%s' "$line" | sed 's/.*"html":"n\([0-9]*\)".*/\1/'); echo "ok $id 12.5 $n 2400 1260" ;;
	esac
done
`

func TestPuppeteerProcess(t *testing.T) {
	ctx := context.Background()
	t.Run("answers reach their requests", func(t *testing.T) {
		p, err := StartPuppeteer(ctx, fakeNode(t, echoRenders))
		if err != nil {
			t.Fatal(err)
		}
		if p.Version != "Chrome/156" {
			t.Errorf("Version = %q", p.Version)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 40)
		for c := range 4 {
			wg.Go(func() {
				for i := range 10 {
					n := 100*c + i
					shot, err := p.Render(ctx, c%2, fmt.Sprintf("n%d", n), true, "")
					switch {
					case err != nil:
						errs <- err
					case shot.Bytes != n:
						errs <- fmt.Errorf("request %d got the answer to %d", n, shot.Bytes)
					case shot.Elapsed != 12500*time.Microsecond || shot.Width != 2400 || shot.Height != 1260 || shot.Wall <= 0:
						errs <- fmt.Errorf("shot %+v", shot)
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if _, err := p.Render(ctx, 0, "fail", true, ""); err == nil || !strings.Contains(err.Error(), "page crashed") {
			t.Errorf("Render of a failing page = %v, want its message", err)
		}
		if err := p.Close(); err != nil {
			t.Fatalf("Close = %v", err)
		}
	})
	t.Run("an unreadable answer ends the process", func(t *testing.T) {
		p, err := StartPuppeteer(ctx, fakeNode(t, echoRenders))
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Render(ctx, 0, "garble", true, "")
		if !errors.Is(err, ErrPuppeteer) || !strings.Contains(err.Error(), `"ok `) {
			t.Errorf("Render = %v, want the unreadable answer named", err)
		}
		if err := p.Close(); !errors.Is(err, ErrPuppeteer) {
			t.Errorf("Close = %v, want the protocol error", err)
		}
	})
	t.Run("an exit before ready", func(t *testing.T) {
		_, err := StartPuppeteer(ctx, fakeNode(t, "echo \"Error: Cannot find module 'puppeteer-core'\" >&2\nexit 3\n"))
		if !errors.Is(err, ErrPuppeteer) || !strings.Contains(err.Error(), "Cannot find module") {
			t.Fatalf("StartPuppeteer = %v, want Node's last words", err)
		}
	})
	t.Run("an exit during a render", func(t *testing.T) {
		p, err := StartPuppeteer(ctx, fakeNode(t, "echo 'ready 1 Chrome/156'\nread -r line\necho 'the browser disconnected' >&2\nexit 2\n"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Render(ctx, 0, "<p>card</p>", true, "")
		if !errors.Is(err, ErrPuppeteer) || !strings.Contains(err.Error(), "the browser disconnected") {
			t.Errorf("Render = %v, want the exit with Node's last words", err)
		}
		if err := p.Close(); !errors.Is(err, ErrPuppeteer) {
			t.Errorf("Close = %v, want the unclean exit", err)
		}
	})
}
