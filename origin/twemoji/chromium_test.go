package twemoji

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/pictorhq/pictor/origin/chromiumtest"
)

// newChromium starts headless Chromium for one test and returns a tab.
func newChromium(t *testing.T) context.Context { return chromiumtest.NewTab(t) }

const emojiPage = `<!doctype html>
<meta charset="utf-8">
<style>img { width: 100% }</style>
<body>
<p id="a">Hello 😀 world</p>
<p id="b">Family: 👨‍👩‍👧 and a heart ❤️</p>
<p id="c">Phoenix, newer than the image set: 🐦‍🔥</p>
<textarea id="d">not in a textarea 😀</textarea>
</body>`

// TestScriptInChromium loads a page from a loopback server that also serves
// Handler, runs Script and checks that the emoji became images that loaded
// from that server, and nothing else was requested.
func TestScriptInChromium(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	mux := http.NewServeMux()
	mux.Handle(Prefix, Handler())
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, emojiPage)
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	defer srv.Close()

	ctx := newChromium(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](Script(srv.URL), chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Errorf("script reports %d images, want 4 (😀 👨‍👩‍👧 ❤️ 🐦‍🔥)", n)
	}

	type img struct {
		Alt, Src, Class, Draggable, Style string
		Complete                          bool
		NaturalWidth                      int
		Width                             float64
		Parent                            string
	}
	imgs, err := chromedp.Run(ctx, chromedp.Evaluate[[]img](`Array.from(document.querySelectorAll("img")).map(i => ({
		Alt: i.alt, Src: i.src, Class: i.className, Draggable: i.getAttribute("draggable"),
		Style: i.getAttribute("style"), Complete: i.complete, NaturalWidth: i.naturalWidth,
		Width: i.getBoundingClientRect().width, Parent: i.parentElement.id }))`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"😀":     srv.URL + "/twemoji/1f600.svg",
		"👨‍👩‍👧": srv.URL + "/twemoji/1f468-200d-1f469-200d-1f467.svg",
		"❤️":    srv.URL + "/twemoji/2764.svg",
	}
	for _, im := range imgs {
		if want[im.Alt] != im.Src {
			t.Errorf("img alt %q src %q, want src %q", im.Alt, im.Src, want[im.Alt])
			continue
		}
		delete(want, im.Alt)
		if im.Class != "emoji" || im.Draggable != "false" || !strings.Contains(im.Style, "height:1em") {
			t.Errorf("%s: class %q draggable %q style %q", im.Alt, im.Class, im.Draggable, im.Style)
		}
		if !im.Complete || im.NaturalWidth <= 0 {
			t.Errorf("%s: not loaded (complete %v, naturalWidth %d)", im.Alt, im.Complete, im.NaturalWidth)
		}
		if im.Width <= 0 || im.Width > 40 {
			t.Errorf("%s: %v px wide, want about 1em", im.Alt, im.Width)
		}
		if im.Parent == "d" {
			t.Errorf("%s: replaced inside a textarea", im.Alt)
		}
	}
	for alt := range want {
		t.Errorf("no image for %s", alt)
	}

	// The phoenix has no image in the set: it must be text again.
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("c").textContent`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "🐦‍🔥") {
		t.Errorf("failed image did not fall back to text: %q", text)
	}

	mu.Lock()
	defer mu.Unlock()
	for _, p := range paths {
		if p != "/" && p != "/favicon.ico" && !strings.HasPrefix(p, Prefix) {
			t.Errorf("unexpected request %s", p)
		}
	}
}
