package render

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestResetClearsWindowName: window.name survives navigations in a tab,
// so the reset clears it: a render's page does not see the one the
// previous render on the tab set.
func TestResetClearsWindowName(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Tabs = 1 })
	page := boxPage(`const ok = window.name === "";
window.name = "left behind";`)
	for i := range 3 {
		if c := renderBox(t, e, i, page); c != boxGreen {
			t.Fatalf("render %d: box is %v: the page saw the previous render's window.name", i, c)
		}
	}
}

// leavesTraces is a page that sees whether a previous render left a
// cookie, local or session storage, or window.name, and leaves each.
var leavesTraces = boxPage(`const ok = document.cookie === "" && localStorage.length === 0 &&
  sessionStorage.length === 0 && window.name === "";
document.cookie = "left=behind; max-age=3600";
localStorage.setItem("left", "behind");
sessionStorage.setItem("left", "behind");
window.name = "left behind";`)

// TestResetLaterClean: a tab reset after its render (once no other render
// loads) or when the next render of its organization needs it at once
// (one tab: the render hurries the reset and waits for it) serves that
// render as a first visit: no cookie, storage or window.name of the page
// before, and no new tab is opened for it.
func TestResetLaterClean(t *testing.T) {
	tests := []struct {
		name string
		tabs int
	}{
		{name: "one tab, the next render hurries the reset", tabs: 1},
		{name: "two tabs, each reset while the other renders", tabs: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			e := newEngine(t, metered(reg, func(c *Config) { c.Tabs = tt.tabs }))
			opened := metric(t, reg, "pictor_render_tabs_opened_total")
			for i := range 2*tt.tabs + 2 {
				if c := renderBox(t, e, i, leavesTraces); c != boxGreen {
					t.Fatalf("render %d: box is %v: the page saw what the previous render on its tab left", i, c)
				}
			}
			if got := metric(t, reg, "pictor_render_tabs_opened_total"); got != opened {
				t.Fatalf("%v tabs opened for renders of one organization on %d warm tabs", got-opened, tt.tabs)
			}
		})
	}
}

// TestResetAfterOthersLoad: the tab of a render that ended while another
// render loads its page is reset once that render began its capture, not
// while it loads, and is then clean for the next render.
func TestResetAfterOthersLoad(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Tabs = 2 })
	e.dirtyFor = 10 * time.Minute // only the other render's capture lets the reset start
	var mu sync.Mutex
	var resets []int // renders loading as each reset started
	e.resetStarted = func(_ *tab, loading int) {
		mu.Lock()
		defer mu.Unlock()
		resets = append(resets, loading)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	loading, finish := startLoading(t, e, ctx, "o")
	if c := renderBox(t, e, 0, leavesTraces); c != boxGreen {
		t.Fatalf("box is %v", c)
	}
	mu.Lock()
	early := len(resets)
	mu.Unlock()
	finish()
	if out := wait(t, loading); out.err != nil {
		t.Fatal(out.err)
	}
	quiesce(t, e)
	mu.Lock()
	defer mu.Unlock()
	if early != 0 || len(resets) != 2 {
		t.Fatalf("%d resets while the other render loaded, %d in all; want 0 and 2", early, len(resets))
	}
	for i, n := range resets {
		if n != 0 {
			t.Fatalf("reset %d started while %d renders loaded", i, n)
		}
	}
	if c := renderBox(t, e, 1, leavesTraces); c != boxGreen {
		t.Fatalf("the next render's box is %v: the reset left traces", c)
	}
}

// TestDirtyAndIdleTabsWithinTabs: tabs waiting for their reset hold their
// pages, so dirty and idle tabs together stay within Tabs (the memory
// bound counts every open tab): while one render loads (resets wait for
// its capture), renders of other organizations one after another leave at
// most Tabs tabs besides the loading one.
func TestDirtyAndIdleTabsWithinTabs(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newEngine(t, metered(reg, func(c *Config) { c.Tabs = 2 }))
	e.dirtyFor = 10 * time.Minute // only the loading render's capture would let a reset start
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	loading, finish := startLoading(t, e, ctx, "loading")
	for i, org := range []string{"a", "b", "c", "d", "e"} {
		res, err := e.Render(ctx, &Request{OrgID: org, HTML: leavesTraces, DeviceScale: 1, MaxWait: 5 * time.Second, MaxWidth: 16384, MaxHeight: 16384})
		if err != nil {
			t.Fatalf("render %d: %v", i, err)
		}
		if c := rgba(decodePNG(t, res.Data), 50, 25); c != boxGreen {
			t.Fatalf("render %d: box is %v", i, c)
		}
	}
	// Tabs are released after the render returns: wait for the count to
	// settle, within a deadline.
	deadline := time.Now().Add(30 * time.Second)
	for {
		open := metric(t, reg, "pictor_render_tabs_open")
		if open <= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v tabs open with one render loading and 2 tabs: want at most 3 (the loading one, and dirty and idle ones within Tabs)", open)
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	finish()
	if o := wait(t, loading); o.err != nil {
		t.Fatalf("the loading render: %v", o.err)
	}
}

// startLoading starts a render of org that loads until finish is called:
// its load event waits for an image of a loopback server that answers
// only then. It returns once the image was asked for.
func startLoading(t *testing.T, e *Engine, ctx context.Context, org string) (loading <-chan outcomeOf, finish func()) {
	t.Helper()
	asked := make(chan struct{}, 1)
	answer := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		select {
		case <-answer:
		case <-r.Context().Done():
		}
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Write([]byte(`<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>`))
	}))
	var once sync.Once
	finish = func() { once.Do(func() { close(answer) }) }
	// Cleanups run last in, first out: the answer goes before the server's
	// Close, should the test fail early.
	t.Cleanup(slow.Close)
	t.Cleanup(finish)
	loading = start(e, ctx, &Request{OrgID: org, HTML: `<img src="` + slow.URL + `/i.svg" width="10" height="10">`,
		MaxWait: time.Minute, MaxWidth: 16384, MaxHeight: 16384})
	select {
	case <-asked:
	case <-ctx.Done():
		t.Fatal("the slow page's image was never asked for")
	}
	return loading, finish
}

// TestResetClearsIndexedDB: a database a render's page made is gone for
// the next render on the tab.
func TestResetClearsIndexedDB(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Tabs = 1 })
	page := `<div id="box" style="width:100px;height:50px;background:rgb(0,0,255)"></div><script>
(async () => {
  let ok = false;
  try {
    ok = (await indexedDB.databases()).length === 0;
    await new Promise((done, fail) => {
      const r = indexedDB.open("left-behind");
      r.onsuccess = () => { r.result.close(); done(); };
      r.onerror = fail;
    });
    ok = ok && (await indexedDB.databases()).length === 1;
  } catch (e) {
    ok = false;
  }
  document.getElementById("box").style.background = ok ? "rgb(0,128,0)" : "rgb(255,0,0)";
  ScreenshotReady();
})();
</script>`
	for i := range 3 {
		if c := renderBoxOf(t, e, i, &Request{HTML: page, WhenReady: true}); c != boxGreen {
			t.Fatalf("render %d: box is %v: the page saw the previous render's database (or could not make its own)", i, c)
		}
	}
}

// TestWornTabsReplaced: a tab closed after TabUses renders is replaced in
// the background, as Start opened it, so the engine keeps Tabs tabs: a
// client rendering one image at a time keeps finding a clean tab instead
// of waiting for the reset of the one it just used.
func TestWornTabsReplaced(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newEngine(t, metered(reg, func(c *Config) { c.Tabs, c.TabUses = 2, 1 }))
	refilled := make(chan struct{}, 16)
	e.refilled = func() { refilled <- struct{}{} }
	for i := range 4 {
		if c := renderBox(t, e, i, boxPage(`const ok = true;`)); c != boxGreen {
			t.Fatalf("render %d: box is %v", i, c)
		}
		waitRefill(t, refilled)
		if got := metric(t, reg, "pictor_render_tabs_open"); got != 2 {
			t.Fatalf("after render %d and its tab's replacement: %v tabs open, want 2", i, got)
		}
	}
	if got := metric(t, reg, "pictor_render_tabs_opened_total"); got != 2+4 {
		t.Fatalf("%v tabs opened, want the 2 of Start and one for each of the 4 worn", got)
	}
	if got := metric(t, reg, "pictor_render_reset_waits_total"); got != 0 {
		t.Fatalf("%v renders waited for a reset, want none: every tab was used once", got)
	}
}
