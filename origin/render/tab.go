package render

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/css"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/emulation"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/pictorhq/pictor/origin/egress"
	"github.com/pictorhq/pictor/origin/twemoji"
)

// tab is a page in its own browser context (cookies, storage and cache of
// its own) whose every request goes through its own egress session. A tab
// serves one organization at a time.
type tab struct {
	b       *browser
	ctx     context.Context
	cancel  context.CancelFunc
	session *egress.Session
	frame   cdp.FrameID // the main frame: the same for every document the tab loads
	org     string      // "" until its first render
	uses    int
	broken  bool // interrupted or failed: never reused
	// blank is the blank document of the internal host the tab shows,
	// which nothing ran in yet (zero when it shows another): an HTML render
	// writes its document into it instead of navigating (see write). Only
	// the render or reset holding the tab reads or sets it.
	blank   blankPage
	closed  sync.Once
	onClose func()

	// Under the engine's mu: loading says the tab's render has not begun
	// its capture yet (Engine.loaded); while the tab is dirty (waits for
	// its reset), hurry, closed once (hurried), starts the reset now, and
	// cleaned closes when the tab is reset and idle, or closed.
	loading, hurried bool
	hurry, cleaned   chan struct{}

	emulation *emulationState          // what the emulation commands last set; nil when unknown
	doc       atomic.Pointer[document] // what the internal host serves now
	origins   map[string]bool          // origins to clear before the tab is reused
	route     string                   // the upstream its session routes through ("" direct), as routeOf names it
	emoji     http.Handler
}

// document is the HTML of the current render, served at /doc/<token>.
type document struct {
	token string
	html  string
}

// newTab opens a tab on b, bounded by ctx.
func (e *Engine) newTab(ctx context.Context, b *browser) (*tab, error) {
	t := &tab{b: b, origins: map[string]bool{}, emoji: twemoji.Handler()}
	session, err := e.cfg.Gateway.Open(egress.Policy{
		AllowPrivate: e.cfg.AllowPrivate,
		InternalHost: InternalHost,
		Internal:     t,
		Peer:         e.peer(b),
	})
	if err != nil {
		return nil, fmt.Errorf("%w: egress session: %v", ErrBrowser, err)
	}
	t.session = session
	e.metrics.tabsOpen.Inc()
	b.tabs.Add(1)
	t.onClose = func() {
		e.metrics.tabsOpen.Dec()
		b.tabs.Add(-1)
	}
	t.ctx, t.cancel = chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext(func(p *target.CreateBrowserContextParams) {
		p.ProxyServer = "http://" + session.Addr()
		p.ProxyBypassList = "<-loopback>"
		p.DisposeOnDetach = new(true)
	}))
	// The tab's first Run opens it; bound that by ctx. The tab's own
	// context must not stay tied to ctx afterwards.
	stop := context.AfterFunc(ctx, t.cancel)
	err = chromedp.Do(t.ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		// chromedp enables the DOM, CSS and Log domains for its own queries,
		// which the engine does not use: with DOM on, every new or written
		// document costs a DOM.getDocument and its nodes events, and every
		// style sheet an event (flat card −7 ms p50, docs/render-performance.md).
		if _, err := cdp.Call(ctx, tg, css.Disable, cdp.Empty{}); err != nil {
			return err
		}
		if _, err := cdp.Call(ctx, tg, dom.Disable, cdp.Empty{}); err != nil {
			return err
		}
		if _, err := cdp.Call(ctx, tg, cdplog.Disable, cdp.Empty{}); err != nil {
			return err
		}
		tree, err := cdp.Call(ctx, tg, page.GetFrameTree, cdp.Empty{})
		if err != nil {
			return err
		}
		t.frame = tree.FrameTree.Frame.ID
		// A page never writes to the server's disk.
		if _, err := chromedp.CallBrowser(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
			Behavior: cdpbrowser.SetDownloadBehaviorBehaviorDeny, BrowserContextID: chromedp.FromContext(ctx).BrowserContextID,
		}); err != nil {
			return err
		}
		if _, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: readyScript}); err != nil {
			return err
		}
		return t.loadBlank(ctx, tg)
	}))
	if !stop() && err == nil {
		err = fmt.Errorf("opening abandoned: %w", ctx.Err())
	}
	if err != nil {
		t.close()
		return nil, fmt.Errorf("%w: open tab: %v", ErrBrowser, err)
	}
	e.metrics.tabsOpened.Inc()
	go t.answerDialogs(chromedp.Events(t.ctx, page.JavascriptDialogOpening))
	return t, nil
}

// answerDialogs accepts every JavaScript dialog the tab's pages open, as
// a user pressing OK would: alert closes, confirm returns true, prompt its
// default text, beforeunload lets the page go. An open dialog blocks its
// page, and the render with it, until someone answers; nobody else will.
// It returns when the tab closes.
func (t *tab) answerDialogs(dialogs iter.Seq2[page.EventJavascriptDialogOpening, error]) {
	for ev, err := range dialogs {
		if err != nil {
			return
		}
		chromedp.Call(t.ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true, PromptText: ev.DefaultPrompt})
	}
}

// blankDocument is the document a tab waits on for its next render
// (loadBlank): standards mode, nothing in it.
const blankDocument = "<!DOCTYPE html><html><head></head><body></body></html>"

// blankPage is a loaded blank document: the token of its URL, which the
// next render's document takes, and its loader.
type blankPage struct {
	token  string
	loader cdp.LoaderID
}

// ServeHTTP answers the internal host: the current document and emoji.
func (t *tab) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasPrefix(r.URL.Path, "/doc/"):
		d := t.doc.Load()
		if d == nil || r.URL.Path != docPath(d.token) {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, d.html)
	case strings.HasPrefix(r.URL.Path, "/twemoji/"):
		t.emoji.ServeHTTP(w, r)
	default:
		http.NotFound(w, r)
	}
}

// newToken names a document of the internal host: unguessable, so a page
// reaches no other render's document.
func newToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// docPath is the path of the internal host's document named token.
func docPath(token string) string { return "/doc/" + token }

// serveAt publishes html as the tab's document at the URL of token, which
// it returns.
func (t *tab) serveAt(token, html string) string {
	t.doc.Store(&document{token: token, html: html})
	return "http://" + InternalHost + docPath(token)
}

// loadBlank navigates the tab to a blank document at the URL of the next
// render's document, and waits for it to load; the tab is then blank. Its
// window is new (the document-start script ran in it, nothing else did),
// so a render that writes into it starts with a fresh window and the URL a
// navigation to its document would give, as the same URL serves it from
// then on (see write).
func (t *tab) loadBlank(ctx context.Context, tg *chromedp.Target) error {
	t.blank = blankPage{}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	loaded := chromedp.Events(lctx, page.LoadEventFired)
	token := newToken()
	target := t.serveAt(token, blankDocument)
	res, err := cdp.Call(ctx, tg, page.Navigate, page.NavigateParams{URL: target})
	if err != nil {
		return err
	}
	if res.ErrorText != "" {
		return fmt.Errorf("blank document: %s", res.ErrorText)
	}
	if err := firstEvent(ctx, loaded); err != nil {
		return err
	}
	t.blank = blankPage{token: token, loader: res.LoaderID}
	return nil
}

// storageTypes is what a reset clears of each origin the page used:
// everything a page can store and read back. Not "all": that adds the GPU's
// shader cache (the browser's own, shared by its tabs, no page data), a
// pass over a disk cache on every reset (docs/render-performance.md).
const storageTypes = "cookies,file_systems,indexeddb,local_storage,websql,service_workers,cache_storage," +
	"interest_groups,shared_storage,storage_buckets"

// reset clears what a render left behind so the next render of the same
// organization starts like a first visit, on a blank document.
func (t *tab) reset(ctx context.Context) error {
	t.doc.Store(nil)
	t.blank = blankPage{}
	return chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		// window.name belongs to the tab, not the document: unless cleared
		// it would pass to the next render's page. A page that cannot be
		// reached (it is navigating) keeps it; its next document is the
		// same render's.
		evaluate(ctx, tg, `window.name = ""`, nil)
		// The blank document replaces the page before its cookies and
		// storage go, so the page cannot write them again; it runs no
		// script of its own and reads neither.
		if err := t.loadBlank(ctx, tg); err != nil {
			return err
		}
		if _, err := cdp.Call(ctx, tg, network.ClearBrowserCookies, cdp.Empty{}); err != nil {
			return err
		}
		for origin := range t.origins {
			if _, err := cdp.Call(ctx, tg, storage.ClearDataForOrigin, storage.ClearDataForOriginParams{Origin: origin, StorageTypes: storageTypes}); err != nil {
				return err
			}
		}
		clear(t.origins)
		return nil
	}))
}

// hurryLocked starts the reset of the dirty tab now; the engine's mu is
// held.
func (t *tab) hurryLocked() {
	if !t.hurried {
		t.hurried = true
		close(t.hurry)
	}
}

// close ends the tab, its browser context and its egress session. Repeated
// calls do nothing.
func (t *tab) close() {
	t.closed.Do(func() {
		if t.cancel != nil {
			t.cancel()
		}
		if t.session != nil {
			t.session.Close()
		}
		if t.onClose != nil {
			t.onClose()
		}
	})
}

// emulation is the state the emulation commands set.
type emulationState struct {
	width, height            int
	scale                    float64
	mobile, landscape, touch bool
	media, scheme, timezone  string
	transparent              bool
}

// emulate applies every emulation setting that differs from what the tab
// has: tabs are reused, and each command costs a relayout. It reports
// whether the tab already had them all, so that the document it shows was
// made under the request's emulation (touch support, for one, is fixed
// when a window is made).
func (t *tab) emulate(ctx context.Context, tg *chromedp.Target, r *Request) (same bool, err error) {
	w, h := r.viewport()
	want := emulationState{width: w, height: h, scale: r.scale(), mobile: r.Mobile, landscape: r.Landscape, touch: r.Touch,
		media: r.MediaType, scheme: r.ColorScheme, timezone: r.Timezone, transparent: r.Transparent}
	have := t.emulation
	t.emulation = nil // unknown until every command succeeded
	if have == nil || have.width != want.width || have.height != want.height || have.scale != want.scale ||
		have.mobile != want.mobile || have.landscape != want.landscape {
		orientation := &emulation.ScreenOrientation{Type: emulation.ScreenOrientationTypePortraitPrimary, Angle: 0}
		if r.Landscape {
			orientation = &emulation.ScreenOrientation{Type: emulation.ScreenOrientationTypeLandscapePrimary, Angle: 90}
		}
		if _, err := cdp.Call(ctx, tg, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
			Width: int64(w), Height: int64(h), DeviceScaleFactor: want.scale, Mobile: r.Mobile,
			ScreenWidth: int64(w), ScreenHeight: int64(h), ScreenOrientation: orientation,
		}); err != nil {
			return false, err
		}
	}
	if have == nil || have.touch != want.touch {
		touch := emulation.SetTouchEmulationEnabledParams{Enabled: r.Touch}
		if r.Touch {
			touch.MaxTouchPoints = 5
		}
		if _, err := cdp.Call(ctx, tg, emulation.SetTouchEmulationEnabled, touch); err != nil {
			return false, err
		}
	}
	if have == nil || have.media != want.media || have.scheme != want.scheme {
		media := emulation.SetEmulatedMediaParams{Media: r.MediaType,
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: r.ColorScheme}}}
		if _, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, media); err != nil {
			return false, err
		}
	}
	if (have == nil && want.timezone != "") || (have != nil && have.timezone != want.timezone) {
		if _, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: r.Timezone}); err != nil {
			return false, err
		}
	}
	if have == nil || have.transparent != want.transparent {
		// The generated RGBA omits a zero alpha, so this one is sent by hand.
		bg := map[string]any{}
		if r.Transparent {
			bg["color"] = map[string]any{"r": 0, "g": 0, "b": 0, "a": 0}
		}
		if err := tg.Call(ctx, "Emulation.setDefaultBackgroundColorOverride", bg, nil); err != nil {
			return false, err
		}
	}
	t.emulation = &want
	return have != nil && *have == want, nil
}

// routeOf names an upstream route: equal names, equal routes.
func routeOf(u *egress.Upstream) string {
	if u == nil {
		return ""
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00%s\x00%s\x00", u.Scheme, u.Host, u.Port, u.Username, u.Password)
	for _, b := range u.Bypass {
		fmt.Fprintf(h, "%s\x00", b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// useRoute points the tab's egress session at the render's upstream. A
// change closes every connection and tunnel of the previous route (the
// session does) and empties the browser's HTTP cache, so nothing fetched
// over one route is served to a render of another.
func (t *tab) useRoute(ctx context.Context, u *egress.Upstream) error {
	r := routeOf(u)
	if r == t.route {
		return nil
	}
	if err := t.session.SetUpstream(u); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidProxy, err)
	}
	err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, network.ClearBrowserCache, cdp.Empty{})
		return err
	}))
	if err != nil {
		t.broken = true // the cache may hold the other route's answers
		return fmt.Errorf("%w: clear the cache for another route: %v", ErrBrowser, err)
	}
	t.route = r
	return nil
}
