package consent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/pictorhq/pictor/origin/chromiumtest"
)

// newChromium starts headless Chromium for one test and returns a tab.
func newChromium(t *testing.T, extra ...chromedp.ExecAllocatorOption) context.Context {
	return chromiumtest.NewTab(t, append([]chromedp.ExecAllocatorOption{chromedp.WindowSize(1280, 800)}, extra...)...)
}

// eval evaluates a JavaScript function with JSON arguments and decodes its
// result, awaiting a Promise.
func eval[T any](t *testing.T, ctx context.Context, fn string, args ...any) T {
	t.Helper()
	enc := make([]string, len(args))
	for i, a := range args {
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		enc[i] = string(b)
	}
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T]("("+fn+")("+strings.Join(enc, ",")+")", chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %.60s: %v", fn, err)
	}
	return v
}

// userScroll scrolls the page down as a user would, with a synthesized
// mouse-wheel gesture that the command waits out, and returns window.scrollY.
// Unlike window.scrollTo it respects overflow: hidden. When the page must
// not move, it reads the position two frames after one gesture. When it
// must, it repeats the gesture until the page has scrolled, for up to ten
// seconds: on a busy machine the compositor can take a gesture before it
// has the page's new styles, find the page locked still, and drop it, and
// the page's main thread can see a scroll several frames late. A page that
// stays locked fails every gesture and returns 0.
func userScroll(t *testing.T, ctx context.Context, moved bool) float64 {
	t.Helper()
	eval[any](t, ctx, `() => window.scrollTo(0, 0)`)
	gesture := func() {
		_, err := chromedp.Run(ctx, func(ctx context.Context, tg *chromedp.Target) (cdp.Empty, error) {
			return cdp.Call(ctx, tg, input.SynthesizeScrollGesture, input.SynthesizeScrollGestureParams{
				X: 640, Y: 400, YDistance: -600, Speed: 6000,
				GestureSourceType: input.GestureSourceTypeMouse,
			})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if !moved {
		gesture()
		return eval[float64](t, ctx, `() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => done(window.scrollY))))`)
	}
	for end := time.Now().Add(10 * time.Second); ; {
		gesture()
		// The position once it moves, or after a second of frames.
		y := eval[float64](t, ctx, `() => new Promise(done => {
			const end = performance.now() + 1000;
			const look = () => window.scrollY > 0 || performance.now() > end ? done(window.scrollY) : requestAnimationFrame(look);
			look();
		})`)
		if y > 0 || time.Now().After(end) {
			return y
		}
	}
}

const injectCSS = `(css) => {
	const s = document.createElement("style");
	s.textContent = css;
	(document.head || document.documentElement).appendChild(s);
	return s.sheet.cssRules.length;
}`

const bannerPage = `<!doctype html>
<html><head><meta charset="utf-8"><style>
body { margin: 0; overflow: hidden; font: 16px sans-serif }
header { position: sticky; top: 0; background: #fff; z-index: 10 }
.tall { height: 4000px; background: linear-gradient(#fff, #99c) }
#onetrust-banner-sdk { position: fixed; left: 0; right: 0; bottom: 0; height: 140px; background: #fff; z-index: 1001 }
.site-notice { position: fixed; top: 60px; right: 20px; width: 320px; background: #eee; z-index: 1000 }
#dim { position: fixed; inset: 0; background: rgba(0, 0, 0, .5); z-index: 999 }
#chat { position: fixed; right: 10px; bottom: 160px; width: 64px; height: 64px; z-index: 5 }
.promo { position: fixed; left: 10px; bottom: 160px; width: 200px; z-index: 5; background: #ffc }
</style></head>
<body>
<header id="site-header"><a href="/">Home</a> <a href="/privacy">Privacy policy</a> <a href="/cookies">Cookie policy</a></header>
<div class="tall">Page content</div>
<div id="onetrust-banner-sdk"><p>We use cookies to give you the best experience.</p><button id="onetrust-accept-btn-handler">Accept All Cookies</button></div>
<div class="site-notice" id="custom"><p>This site uses cookies for analytics.</p><button>Got it</button></div>
<div id="dim"></div>
<div id="chat"><button>Chat with us</button></div>
<div class="promo" id="promo"><p>Spring sale: 20% off</p><button>Shop now</button></div>
<div id="legal" style="position: fixed; left: 0; bottom: 0; z-index: 4">© Example <a href="/cookies">Cookie settings</a> <a href="/contact">Contact</a></div>
<div id="frame-wrap" style="position: fixed; top: 100px; left: 100px; width: 400px; height: 300px; z-index: 1002">
<iframe id="sp_message_iframe_1234" title="SP Consent Message" src="about:blank"></iframe></div>
</body></html>`

// TestInChromium runs the rule set in headless Chromium: a page with a
// consent banner is cleaned, every shipped selector parses, and the
// patterns of BlockPatterns block in the browser what BlockURL blocks.
func TestInChromium(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, bannerPage)
	}))
	defer srv.Close()
	ctx := newChromium(t)

	t.Run("banner", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL)); err != nil {
			t.Fatal(err)
		}
		// Before: the banner shows and the user cannot scroll.
		if h := eval[float64](t, ctx, `() => document.getElementById("onetrust-banner-sdk").getBoundingClientRect().height`); h == 0 {
			t.Fatal("fixture: no banner")
		}
		if y := userScroll(t, ctx, false); y != 0 {
			t.Fatalf("fixture: the page scrolled to %v before Script", y)
		}
		host, _, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
		css := CSS(host)
		if n := eval[int](t, ctx, injectCSS, css); n != strings.Count(css, "\n") {
			t.Errorf("Chromium kept %d of the %d rules of CSS(%q)", n, strings.Count(css, "\n"), host)
		}
		type summary struct {
			Hidden           int
			Marked, Unlocked bool
		}
		got := eval[summary](t, ctx, "() => "+Script())
		if !got.Marked || !got.Unlocked || got.Hidden != 3 {
			t.Errorf("Script() = %+v, want the marker seen, scrolling unlocked, 3 hidden (#custom, #frame-wrap, #dim)", got)
		}
		visible := eval[map[string]bool](t, ctx, `(ids) => Object.fromEntries(ids.map(id => {
			const el = document.getElementById(id);
			const cs = getComputedStyle(el), r = el.getBoundingClientRect();
			return [id, cs.display !== "none" && cs.visibility !== "hidden" && r.width > 0 && r.height > 0];
		}))`, []string{"onetrust-banner-sdk", "custom", "dim", "frame-wrap", "site-header", "chat", "promo", "legal"})
		want := map[string]bool{
			"onetrust-banner-sdk": false, "custom": false, "dim": false, "frame-wrap": false, // consent
			"site-header": true, "chat": true, "promo": true, "legal": true, // page furniture
		}
		for id, w := range want {
			if visible[id] != w {
				t.Errorf("#%s visible: %v, want %v", id, visible[id], w)
			}
		}
		if y := userScroll(t, ctx, true); y == 0 {
			t.Error("the user cannot scroll the page after Script")
		}
	})

	t.Run("every selector parses", func(t *testing.T) {
		rs := rules()
		sels := slices.Clone(rs.generic)
		for _, ix := range []domainIndex{rs.specific, rs.exceptions} {
			for _, rules := range ix.byDomain {
				for _, r := range rules {
					sels = append(sels, r.selector)
				}
			}
			for _, rules := range ix.byEntity {
				for _, r := range rules {
					sels = append(sels, r.selector)
				}
			}
		}
		slices.Sort(sels)
		sels = slices.Compact(sels)
		bad := eval[[]string](t, ctx, `(sels) => sels.filter(s => {
			try { document.querySelector(s); return false } catch (e) { return true }
		})`, sels)
		if len(bad) > 0 {
			t.Errorf("%d of %d selectors do not parse in Chromium: %q", len(bad), len(sels), bad[:min(len(bad), 20)])
		}
	})
}

// TestBlockPatternsInChromium gives BlockPatterns to Network.setBlockedURLs
// and loads a page whose scripts come from a CMP host and an innocent host,
// both resolved to a loopback server.
func TestBlockPatternsInChromium(t *testing.T) {
	var mu sync.Mutex
	var hosts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hosts = append(hosts, r.Host)
		mu.Unlock()
		switch r.URL.Path {
		case "/scripttemplates/otSDKStub.js":
			w.Header().Set("Content-Type", "text/javascript")
			io.WriteString(w, "window.cmpLoaded = true;")
		case "/app.js":
			w.Header().Set("Content-Type", "text/javascript")
			io.WriteString(w, "window.appLoaded = true;")
		default:
			w.Header().Set("Content-Type", "text/html")
			_, port, _ := net.SplitHostPort(r.Host)
			fmt.Fprintf(w, `<!doctype html><script src="http://cdn.cookielaw.org:%s/scripttemplates/otSDKStub.js"></script>
<script src="http://static.innocent.test:%[1]s/app.js"></script>`, port)
		}
	}))
	defer srv.Close()
	ctx := newChromium(t, chromedp.Flag("host-resolver-rules",
		"MAP cdn.cookielaw.org 127.0.0.1, MAP static.innocent.test 127.0.0.1"))

	var patterns []*network.BlockPattern
	for _, p := range BlockPatterns() {
		patterns = append(patterns, &network.BlockPattern{URLPattern: p, Block: true})
	}
	err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		_, err := chromedp.Call(ctx, network.SetBlockedURLs, network.SetBlockedURLsParams{URLPatterns: patterns})
		return err
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	loaded := eval[map[string]bool](t, ctx, `() => ({cmp: !!window.cmpLoaded, app: !!window.appLoaded})`)
	if loaded["cmp"] || !loaded["app"] {
		t.Errorf("loaded %v, want the CMP script blocked and the app script loaded", loaded)
	}
	mu.Lock()
	for _, h := range hosts {
		if strings.HasPrefix(h, "cdn.cookielaw.org") {
			t.Errorf("the blocked CMP host was asked for a script")
		}
	}
	mu.Unlock()

	// The browser's URLPattern agrees with BlockURL wherever a pattern exists.
	urls := append(append([]string{}, cmpURLs...), innocentURLs...)
	got := eval[[]bool](t, ctx, `(ps, urls) => {
		const compiled = ps.map(p => new URLPattern(p));
		return urls.map(u => compiled.some(p => p.test(u)));
	}`, BlockPatterns(), urls)
	for i, u := range urls {
		if got[i] && !BlockURL(u) {
			t.Errorf("%s: a pattern blocks it, BlockURL does not", u)
		}
		if !got[i] && i < len(cmpURLs) {
			t.Errorf("%s: BlockURL blocks it, no pattern does", u)
		}
	}
}
