package render

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/css"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// TestWrittenDocument: an HTML render on a tab whose last render asked for
// the same emulation is written into the tab's blank document (what its
// navigation entry loaded is the blank document), and the page cannot tell
// otherwise: its URL, its navigation entry's and its base URL are the
// document's own on the internal host, render_when_ready's ScreenshotReady
// is there, and nothing a previous render's page left on its window is,
// render after render on one tab. (A tab's first render navigates: its
// emulation is set then.)
func TestWrittenDocument(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Tabs = 1 })
	page := boxPage(fmt.Sprintf(`const nav = performance.getEntriesByType("navigation")[0];
const written = nav !== undefined && nav.decodedBodySize === %d;
const ok = location.origin === "http://pictor.internal" && /^\/doc\/[0-9a-f]{32}$/.test(location.pathname) &&
  document.baseURI === location.href && typeof window.ScreenshotReady === "function" &&
  window.leftBehind === undefined && document.compatMode === "CSS1Compat" &&
  nav !== undefined && nav.name === location.href && written === !window.wantNavigated;
window.leftBehind = 1;`, len(blankDocument)))
	if c := renderBox(t, e, 0, "<script>window.wantNavigated = true</script>"+page); c != boxGreen {
		t.Fatalf("first render: box is %v: it did not navigate to its document", c)
	}
	for i := 1; i < 4; i++ {
		if c := renderBox(t, e, i, page); c != boxGreen {
			t.Fatalf("render %d: box is %v: the written document is not what a navigation gives, or not written", i, c)
		}
	}
}

// parsingPage checks how its document was parsed: no doctype gives quirks
// mode, a script's document.write inserts where it stands, a parser-blocking
// script runs before the next one and a deferred one after both, before
// DOMContentLoaded.
const parsingPage = `<html><body style="margin:0"><script>window.order = [];</script>
<script defer src="data:text/javascript,order.push('defer')"></script>
<script src="data:text/javascript,order.push('blocking')"></script>
<script>document.write('<span id="written"></span>'); order.push('inline');</script>
<script>document.addEventListener("DOMContentLoaded", () => {
  const ok = document.compatMode === "BackCompat" && document.getElementById("written") !== null &&
    order.join() === "blocking,inline,defer" && document.readyState === "interactive";
  document.getElementById("box").style.background = ok ? "rgb(0,128,0)" : "rgb(255,0,0)";
});</script>
<div id="box" style="width:100px;height:50px;background:rgb(0,0,255)"></div></body></html>`

// TestWrittenDocumentParsedAsLoaded: a written document is parsed as the
// same document loaded from a site is: the page above comes out green both
// as HTML (written) and as a URL (navigated to).
func TestWrittenDocumentParsedAsLoaded(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, parsingPage)
	}))
	t.Cleanup(site.Close)
	e := newEngine(t, func(c *Config) { c.Tabs = 1 })
	for i, r := range []*Request{{HTML: parsingPage}, {URL: site.URL}, {HTML: parsingPage}} {
		r.ViewportWidth, r.ViewportHeight = 200, 100
		if c := renderBoxOf(t, e, i, r); c != boxGreen {
			t.Fatalf("html=%t url=%q: box is %v, want green", r.HTML != "", r.URL, c)
		}
	}
}

// TestWriteNeedsTheBlankDocument: a tab that should be blank but shows
// another document is navigated to the render's document instead of
// written into, and the render is right.
func TestWriteNeedsTheBlankDocument(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Tabs = 1 })
	e.mu.Lock()
	tb := e.idle[0]
	e.mu.Unlock()
	if tb.blank.loader == "" {
		t.Fatal("a warm tab is not blank")
	}
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.Navigate, page.NavigateParams{URL: "about:blank"})
		return err
	}))
	if err != nil {
		t.Fatal(err)
	}
	page := boxPage(fmt.Sprintf(`const nav = performance.getEntriesByType("navigation")[0];
const ok = nav !== undefined && nav.name === location.href && location.pathname.startsWith("/doc/") &&
  nav.decodedBodySize !== %d;`, len(blankDocument)))
	if c := renderBox(t, e, 0, page); c != boxGreen {
		t.Fatalf("box is %v: the render did not navigate to its document", c)
	}
}

// TestWriteKeepsEmulation: touch support is fixed when a window is made,
// so a render whose emulation differs from its tab's last render's gets a
// window made under its own: renders switching touch on and off on one
// tab each see what they asked for.
func TestWriteKeepsEmulation(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Tabs = 1 })
	for i, touch := range []bool{false, false, true, true, false, true} {
		page := boxPage(fmt.Sprintf(`const ok = ('ontouchstart' in window) === %t && (navigator.maxTouchPoints > 0) === %t;`, touch, touch))
		if c := renderBoxOf(t, e, i, &Request{HTML: page, Touch: touch}); c != boxGreen {
			t.Fatalf("render %d (touch %t): box is %v: the page's window does not have the touch support asked for", i, touch, c)
		}
	}
}

// TestNoDOMEvents: the tabs run without the DOM and CSS domains chromedp
// enables (the engine reads neither): a render navigated to its document
// and one written into the blank document send none of their events,
// while the page's own load events still arrive.
func TestNoDOMEvents(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Tabs = 1 })
	e.mu.Lock()
	tb := e.idle[0]
	e.mu.Unlock()
	var mu sync.Mutex
	var domEvents, loads int
	lctx, stop := context.WithCancel(tb.ctx)
	defer stop()
	err := chromedp.Listen(lctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev.(type) {
		case *dom.EventDocumentUpdated, *dom.EventSetChildNodes, *dom.EventChildNodeInserted, *css.EventStyleSheetAdded:
			domEvents++
		case *page.EventLoadEventFired:
			loads++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	page := boxPage(`const ok = true;`)
	for i := range 2 {
		if c := renderBox(t, e, i, "<style>p { color: red }</style>"+page); c != boxGreen {
			t.Fatalf("render %d: box is %v", i, c)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if loads == 0 {
		t.Fatal("no load event seen: the listener saw nothing")
	}
	if domEvents != 0 {
		t.Fatalf("%d DOM and CSS events during two renders, want none", domEvents)
	}
}
