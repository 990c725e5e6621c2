package assets

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/pictorhq/pictor/origin/chromiumtest"
)

// csp is as strict as the console's: no inline script or style, no eval.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// watchScript records every CSP violation of the page in
// window.violations. It is a classic script in <head>, so it runs before
// the stylesheet and the module load.
const watchScript = `window.violations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.violations.push(e.violatedDirective + " " + e.blockedURI);
});
`

var testPage = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Console assets</title>
<script src="/test/watch.js"></script>
<link rel="stylesheet" href="{{.CSS}}">
<script type="module" src="{{.JS}}"></script>
</head><body>
<nav class="nav" aria-label="Console"><div class="nav-inner">
<a class="nav-brand" href="/page">Pictor</a>
<ul>{{range .Nav}}<li><a href="/page">{{.}}</a></li>{{end}}</ul>
<form method="post" action="/signout"><button type="submit">Sign out</button></form>
</div></nav>
<main>
<div class="card"><h1>Keys</h1>
<div data-console-status role="status"></div>
<input id="secret" class="code" readonly value="sk_test_0123456789">
<button type="button" id="copy" data-copy-target="#secret">Copy</button>
<form id="del" method="post" action="/submitted" data-confirm="Delete it?" data-busy-guard>
<button id="delete" class="button-danger" type="submit">Delete</button>
</form></div>
</main></body></html>`))

// TestBrowserRunsAssetsUnderStrictCSP loads the assets in a real
// Chromium under a strict CSP, in both themes and at 390 px: the
// stylesheet and the module apply without a violation, the navigation
// wraps rather than widening the page, copy writes the clipboard, and a
// data-confirm form submits only when the person says OK.
func TestBrowserRunsAssetsUnderStrictCSP(t *testing.T) {
	var posts atomic.Int32
	mux := http.NewServeMux()
	mux.Handle(Prefix, Handler())
	mux.HandleFunc("GET /test/watch.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		fmt.Fprint(w, watchScript)
	})
	mux.HandleFunc("GET /page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", csp)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		err := testPage.Execute(w, map[string]any{
			"CSS": Path("console.css"), "JS": Path("console.js"),
			"Nav": []string{"Overview", "Images", "New image", "Templates", "API keys", "OG images", "Proxies", "Storage", "Assistants"},
		})
		if err != nil {
			t.Errorf("page: %v", err)
		}
	})
	mux.HandleFunc("POST /submitted", func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		w.Header().Set("Content-Security-Policy", csp)
		fmt.Fprint(w, `<!DOCTYPE html><p id="done">deleted</p>`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	tab := chromiumtest.NewTab(t)
	ctx, cancel := context.WithTimeout(tab, 2*time.Minute)
	defer cancel()

	// Dialogs: each is reported on dialogs and answered with acceptNext.
	var acceptNext atomic.Bool
	dialogs := make(chan string, 4)
	go func() {
		for ev, err := range chromedp.Events(ctx, page.JavascriptDialogOpening) {
			if err != nil {
				return
			}
			dialogs <- ev.Message
			chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: acceptNext.Load()})
		}
	}()

	eval := func(what, expr string) any {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[any](expr, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
	// until waits in the page (frame by frame, no timer) for cond to hold.
	until := func(what, cond string) {
		t.Helper()
		eval(what, `new Promise((resolve) => { const check = () => (`+cond+`) ? resolve(true) : requestAnimationFrame(check); check(); })`)
	}
	setScheme := func(scheme string) {
		t.Helper()
		if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
		}); err != nil {
			t.Fatalf("emulate %s: %v", scheme, err)
		}
	}

	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1024, 768), chromedp.Navigate(srv.URL+"/page")); err != nil {
		t.Fatalf("load the page: %v", err)
	}
	if got := eval("script ran", `document.documentElement.hasAttribute("data-console-js")`); got != true {
		t.Fatal("the module did not run under the CSP: <html> lacks data-console-js")
	}

	t.Run("themes", func(t *testing.T) {
		for _, tc := range []struct{ scheme, body, danger string }{
			{scheme: "light", body: "rgb(255, 255, 255)", danger: "rgb(180, 35, 24)"},
			{scheme: "dark", body: "rgb(15, 18, 22)", danger: "rgb(255, 123, 114)"},
		} {
			setScheme(tc.scheme)
			got := eval(tc.scheme, `[getComputedStyle(document.body).backgroundColor, getComputedStyle(document.getElementById("delete")).backgroundColor].join("|")`)
			if want := tc.body + "|" + tc.danger; got != want {
				t.Errorf("%s: body and danger button backgrounds %v, want %s", tc.scheme, got, want)
			}
		}
		setScheme("")
	})

	t.Run("390 px", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile)); err != nil {
			t.Fatal(err)
		}
		// On a phone a page wider than the screen widens the layout
		// viewport (innerWidth) and is shown zoomed out.
		got := eval("overflow", `[innerWidth, document.documentElement.scrollWidth, (() => {
			const links = document.querySelectorAll(".nav a");
			return links[links.length - 1].getBoundingClientRect().top > links[0].getBoundingClientRect().top;
		})()].join("|")`)
		if got != "390|390|true" {
			t.Errorf("at 390 px: viewport width, page width, nav wrapped = %v, want 390|390|true", got)
		}
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(1024, 768)); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("no CSP violation", func(t *testing.T) {
		// A deliberate violation (img-src 'self' refuses data:): once it
		// is reported, any from loading the page would have been too.
		eval("violate", `(() => { const i = new Image(); i.src = "data:image/gif;base64,R0lGODlhAQABAAAAACw="; document.body.append(i); return true; })()`)
		until("the deliberate violation", `window.violations.some((v) => v.startsWith("img-src data"))`)
		if got := eval("violations", `window.violations.join("\n")`); !strings.HasPrefix(got.(string), "img-src data") || strings.Contains(got.(string), "\n") {
			t.Fatalf("CSP violations:\n%s\nwant only the deliberate img-src one", got)
		}
	})

	t.Run("copy", func(t *testing.T) {
		for _, name := range []string{"clipboard-read", "clipboard-write"} {
			if _, err := chromedp.CallBrowser(ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
				Permission: &cdpbrowser.PermissionDescriptor{Name: name}, Setting: cdpbrowser.PermissionSettingGranted, Origin: srv.URL,
			}); err != nil {
				t.Fatalf("grant %s: %v", name, err)
			}
		}
		eval("clear the clipboard", `navigator.clipboard.writeText("before").then(() => true)`)
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#copy"))); err != nil {
			t.Fatal(err)
		}
		until("the copy's announcement", `document.querySelector("[data-console-status]").textContent !== ""`)
		if got := eval("status", `document.querySelector("[data-console-status]").textContent + "|" + document.getElementById("copy").textContent`); got != "Copied to the clipboard.|Copied" {
			t.Errorf("after copy: status|button = %v", got)
		}
		if got := eval("clipboard", `navigator.clipboard.readText()`); got != "sk_test_0123456789" {
			t.Errorf("clipboard holds %v, want the input's value", got)
		}
	})

	t.Run("confirm", func(t *testing.T) {
		acceptNext.Store(false)
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#delete"))); err != nil {
			t.Fatal(err)
		}
		select {
		case msg := <-dialogs:
			if msg != "Delete it?" {
				t.Errorf("dialog %q, want the form's data-confirm", msg)
			}
		case <-ctx.Done():
			t.Fatal("no confirmation asked")
		}
		// A dismissed submit is cancelled in the handler itself, before
		// the busy guard marks the form: nothing marks it, nothing leaves.
		if got := eval("after cancel", `location.pathname + "|" + document.getElementById("del").getAttribute("aria-busy")`); got != "/page|" && got != "/page|null" {
			t.Fatalf("after Cancel: %v, want the page, its form not busy", got)
		}

		acceptNext.Store(true)
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#delete")), chromedp.WaitVisible(chromedp.CSS("#done"))); err != nil {
			t.Fatalf("submit after OK: %v", err)
		}
		if msg := <-dialogs; msg != "Delete it?" {
			t.Errorf("second dialog %q", msg)
		}
		if n := posts.Load(); n != 1 {
			t.Fatalf("%d submissions reached the server, want 1 (the confirmed one)", n)
		}
	})
}
