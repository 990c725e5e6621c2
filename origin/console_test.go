package origin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"image"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/pictorhq/pictor/origin"
	"github.com/pictorhq/pictor/origin/admin"
	"github.com/pictorhq/pictor/origin/chromiumtest"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/imageparams/schema"
	"github.com/pictorhq/pictor/origin/images"
)

// consoleClient is a browser stand-in: it keeps no cookies of its own and
// follows no redirects, so each test sees every answer.
type consoleClient struct {
	t      *testing.T
	base   string
	cookie *http.Cookie
}

type consoleAnswer struct {
	status int
	header http.Header
	body   string
}

func (c *consoleClient) send(method, path string, form url.Values, header ...string) consoleAnswer {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.base+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if c.cookie != nil {
		req.AddCookie(c.cookie)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return consoleAnswer{status: resp.StatusCode, header: resp.Header, body: string(raw)}
}

// sendRaw posts an already encoded form.
func (c *consoleClient) sendRaw(method, path, form string) consoleAnswer {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(form))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if c.cookie != nil {
		req.AddCookie(c.cookie)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return consoleAnswer{status: resp.StatusCode, header: resp.Header, body: string(raw)}
}

// signIn signs in with creds and keeps the session cookie.
func (c *consoleClient) signIn(creds apitest.Creds) consoleAnswer {
	c.t.Helper()
	a := c.send("POST", "/console/sign-in", url.Values{"api_id": {creds.APIID}, "api_key": {creds.APIKey}})
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/console/overview" {
		c.t.Fatalf("sign in: %d %s\n%s", a.status, a.header.Get("Location"), a.body)
	}
	resp := http.Response{Header: a.header}
	for _, ck := range resp.Cookies() {
		if strings.HasSuffix(ck.Name, "pictor_console") {
			c.cookie = ck
		}
	}
	if c.cookie == nil {
		c.t.Fatal("sign in set no session cookie")
	}
	return a
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no form token in the page:\n%s", page)
	}
	return m[1]
}

// TestConsoleSignIn: the form, a wrong pair (one generic message, no
// cookie), a right pair (a session cookie with the attributes the issue
// names), the overview as that key, sign-out with and without the form
// token.
func TestConsoleSignIn(t *testing.T) {
	o := startOrigin(t)
	c := &consoleClient{t: t, base: o.URL}

	form := c.send("GET", "/console", nil)
	if form.status != 200 || !strings.Contains(form.body, `name="api_key"`) || !strings.Contains(form.body, `type="password"`) {
		t.Fatalf("sign-in form: %d\n%s", form.status, form.body)
	}
	for h, want := range map[string]string{"Content-Security-Policy": "frame-ancestors 'none'", "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"} {
		if got := form.header.Get(h); !strings.Contains(got, want) {
			t.Errorf("%s = %q, want it to hold %q", h, got, want)
		}
	}
	if csp := form.header.Get("Content-Security-Policy"); strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") || !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("CSP %q allows inline or eval'd script", csp)
	}

	for _, bad := range []apitest.Creds{{APIID: o.Owner.APIID, APIKey: "wrong"}, {APIID: "nobody", APIKey: o.Owner.APIKey}, {}} {
		a := c.send("POST", "/console/sign-in", url.Values{"api_id": {bad.APIID}, "api_key": {bad.APIKey}})
		if a.status != http.StatusUnauthorized || !strings.Contains(a.body, "These credentials do not open the console") {
			t.Errorf("sign in with %q/%q: %d\n%s", bad.APIID, bad.APIKey, a.status, a.body)
		}
		if len(a.header.Values("Set-Cookie")) != 0 {
			t.Errorf("a refused sign-in set a cookie: %v", a.header.Values("Set-Cookie"))
		}
		if bad.APIKey != "" && strings.Contains(a.body, bad.APIKey) {
			t.Errorf("the page repeats the key typed")
		}
	}

	c.signIn(o.Owner)
	ck := c.cookie
	if ck.Name != "pictor_console" || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/console" || ck.Secure || len(ck.Value) != 43 {
		t.Errorf("session cookie %+v: want pictor_console, HttpOnly, SameSite=Strict, Path=/console, 43 characters", ck)
	}
	if strings.Contains(ck.Value, o.Owner.APIKey) || strings.Contains(ck.Value, o.Owner.APIID) {
		t.Error("the cookie carries the credentials")
	}

	home := c.send("GET", "/console", nil)
	if home.status != http.StatusSeeOther || home.header.Get("Location") != "/console/overview" {
		t.Errorf("GET /console signed in: %d %s", home.status, home.header.Get("Location"))
	}
	ov := c.send("GET", "/console/overview", nil)
	if ov.status != 200 || !strings.Contains(ov.body, `id="credits-used">0<`) || !strings.Contains(ov.body, `id="credits-left">`) || !strings.Contains(ov.body, o.Owner.APIID) {
		t.Fatalf("overview: %d\n%s", ov.status, ov.body)
	}
	if strings.Contains(ov.body, o.Owner.APIKey) {
		t.Error("the overview shows the key's secret")
	}

	if a := c.send("POST", "/console/sign-out", url.Values{}); a.status != http.StatusForbidden {
		t.Errorf("sign-out without the form token: %d", a.status)
	}
	if a := c.send("POST", "/console/sign-out", url.Values{"csrf": {"x" + csrfOf(t, ov.body)[1:]}}); a.status != http.StatusForbidden {
		t.Errorf("sign-out with a wrong form token: %d", a.status)
	}
	if a := c.send("GET", "/console/overview", nil); a.status != 200 {
		t.Fatalf("the refused sign-outs ended the session: %d", a.status)
	}
	out := c.send("POST", "/console/sign-out", url.Values{"csrf": {csrfOf(t, ov.body)}})
	if out.status != http.StatusSeeOther || !strings.Contains(strings.Join(out.header.Values("Set-Cookie"), ";"), "Max-Age=0") {
		t.Fatalf("sign-out: %d %v", out.status, out.header.Values("Set-Cookie"))
	}
	if a := c.send("GET", "/console/overview", nil); a.status != http.StatusSeeOther || a.header.Get("Location") != "/console" {
		t.Errorf("the old cookie after sign-out: %d %s", a.status, a.header.Get("Location"))
	}
}

// TestConsoleSessionFollowsTheKey: a session acts with its key's
// permissions, and ends at its next request once the key is disabled,
// or deleted, or its organization suspended.
func TestConsoleSessionFollowsTheKey(t *testing.T) {
	o := startOrigin(t)
	ended := func(t *testing.T, c *consoleClient, why string) {
		t.Helper()
		if a := c.send("GET", "/console/overview", nil); a.status != http.StatusSeeOther || a.header.Get("Location") != "/console" {
			t.Errorf("%s: the session still answers %d", why, a.status)
		}
	}

	narrow := o.createKey(t, o.Owner, map[string]any{"name": "narrow", "permissions": []string{"templates:read"}})
	c := &consoleClient{t: t, base: o.URL}
	c.signIn(*narrow.creds())
	ov := c.send("GET", "/console/overview", nil)
	for _, want := range []string{"lacks the usage:read permission", "lacks the images:read permission"} {
		if !strings.Contains(ov.body, want) {
			t.Errorf("overview of a key without usage:read and images:read lacks %q:\n%s", want, ov.body)
		}
	}
	if strings.Contains(ov.body, `id="credits-used"`) {
		t.Error("a key without usage:read sees the credits")
	}

	o.nextWindow()
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/api-keys/" + narrow.ID, Creds: &o.Owner,
		JSON: map[string]any{"permissions": []string{"templates:read"}, "disabled": true}}), 200)
	ended(t, c, "disabled key")
	a := c.send("POST", "/console/sign-in", url.Values{"api_id": {narrow.APIID}, "api_key": {narrow.APIKey}})
	if a.status != http.StatusUnauthorized {
		t.Errorf("sign in with a disabled key: %d", a.status)
	}

	gone := o.createKey(t, o.Owner, map[string]any{"name": "gone", "permissions": []string{}})
	c = &consoleClient{t: t, base: o.URL}
	c.signIn(*gone.creds())
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/api-keys/" + gone.ID, Creds: &o.Owner}), 204)
	ended(t, c, "deleted key")

	orgID, creds := o.newOrg(t.Context(), t, "free")
	c = &consoleClient{t: t, base: o.URL}
	c.signIn(creds)
	ad, err := admin.Dial(o.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ad.SetSuspended(t.Context(), orgID, true); err != nil {
		t.Fatal(err)
	}
	ended(t, c, "suspended organization")
}

// TestConsoleIdleAndLifetime: a session unused for 12 hours ends, and so
// does one 7 days old however used.
func TestConsoleIdleAndLifetime(t *testing.T) {
	o := startOrigin(t)
	c := &consoleClient{t: t, base: o.URL}
	c.signIn(o.Owner)
	o.Clock.Advance(11 * time.Hour)
	if a := c.send("GET", "/console/overview", nil); a.status != 200 {
		t.Fatalf("after 11 idle hours: %d", a.status)
	}
	o.Clock.Advance(12*time.Hour + time.Minute)
	if a := c.send("GET", "/console/overview", nil); a.status != http.StatusSeeOther {
		t.Errorf("after 12 idle hours: %d", a.status)
	}

	c.signIn(o.Owner)
	for range 16 {
		o.Clock.Advance(11 * time.Hour)
		c.send("GET", "/console/overview", nil)
	}
	if a := c.send("GET", "/console/overview", nil); a.status != http.StatusSeeOther {
		t.Errorf("a session used every 11 hours for 176 hours: %d, want it ended at 7 days", a.status)
	}
}

// TestConsoleSecureCookie: behind an https public URL the cookie is
// Secure and __Host- prefixed (which requires Path=/).
func TestConsoleSecureCookie(t *testing.T) {
	o := startOrigin(t, func(c *origin.Config) { c.PublicURL = "https://pictor.example" })
	c := &consoleClient{t: t, base: o.URL}
	c.signIn(o.Owner)
	if ck := c.cookie; ck.Name != "__Host-pictor_console" || !ck.Secure || ck.Path != "/" || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
		t.Errorf("cookie %+v", ck)
	}
}

// TestHostileConsoleSignInLimit: sign-in attempts from one address are
// limited (429 with Retry-After); another address is not locked out.
func TestHostileConsoleSignInLimit(t *testing.T) {
	o := startOrigin(t)
	c := &consoleClient{t: t, base: o.URL}
	wrong := url.Values{"api_id": {o.Owner.APIID}, "api_key": {"wrong"}}
	for i := range 10 {
		if a := c.send("POST", "/console/sign-in", wrong, "X-Forwarded-For", "203.0.113.7"); a.status != http.StatusUnauthorized {
			t.Fatalf("attempt %d: %d", i+1, a.status)
		}
	}
	a := c.send("POST", "/console/sign-in", url.Values{"api_id": {o.Owner.APIID}, "api_key": {o.Owner.APIKey}}, "X-Forwarded-For", "203.0.113.7")
	if a.status != http.StatusTooManyRequests || a.header.Get("Retry-After") == "" || !strings.Contains(a.body, "Too many sign-in attempts") {
		t.Fatalf("11th attempt: %d Retry-After %q\n%s", a.status, a.header.Get("Retry-After"), a.body)
	}
	if len(a.header.Values("Set-Cookie")) != 0 {
		t.Error("a limited attempt opened a session")
	}
	c.send("POST", "/console/sign-in", url.Values{}, "X-Forwarded-For", "198.51.100.9")
	if a := c.send("POST", "/console/sign-in", url.Values{"api_id": {o.Owner.APIID}, "api_key": {o.Owner.APIKey}}, "X-Forwarded-For", "198.51.100.9"); a.status != http.StatusSeeOther {
		t.Errorf("another address: %d", a.status)
	}
	o.Clock.Advance(61 * time.Second)
	if a := c.send("POST", "/console/sign-in", url.Values{"api_id": {o.Owner.APIID}, "api_key": {o.Owner.APIKey}}, "X-Forwarded-For", "203.0.113.7"); a.status != http.StatusSeeOther {
		t.Errorf("the limited address a minute later: %d", a.status)
	}
}

// TestHostileConsoleCrossSite: a form posted from another site is refused
// before anything is read, the sign-in form included.
func TestHostileConsoleCrossSite(t *testing.T) {
	o := startOrigin(t)
	c := &consoleClient{t: t, base: o.URL}
	a := c.send("POST", "/console/sign-in", url.Values{"api_id": {o.Owner.APIID}, "api_key": {o.Owner.APIKey}}, "Sec-Fetch-Site", "cross-site")
	if a.status != http.StatusForbidden || len(a.header.Values("Set-Cookie")) != 0 {
		t.Errorf("cross-site sign-in: %d %v", a.status, a.header.Values("Set-Cookie"))
	}
	c.signIn(o.Owner)
	ov := c.send("GET", "/console/overview", nil)
	if a := c.send("POST", "/console/sign-out", url.Values{"csrf": {csrfOf(t, ov.body)}}, "Sec-Fetch-Site", "same-site"); a.status != http.StatusForbidden {
		t.Errorf("same-site (not same-origin) sign-out: %d", a.status)
	}
	if a := c.send("GET", "/console/nothing-here", nil); a.status != http.StatusNotFound {
		t.Errorf("unknown console page: %d", a.status)
	}
}

// TestHostileConsoleEscapes: what organizations and keys are named is
// shown as text, never as markup.
func TestHostileConsoleEscapes(t *testing.T) {
	o := startOrigin(t)
	ad, err := admin.Dial(o.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	const evil = `<script>alert(1)</script><img src=x onerror=alert(2)>"'`
	created, err := ad.CreateOrg(t.Context(), evil, "pro")
	if err != nil {
		t.Fatal(err)
	}
	c := &consoleClient{t: t, base: o.URL}
	c.signIn(apitest.Creds{APIID: created.Key.APIID, APIKey: created.Key.APIKey})
	ov := c.send("GET", "/console/overview", nil)
	if strings.Contains(ov.body, "<script>alert") || strings.Contains(ov.body, "<img src=x") {
		t.Fatalf("the organization's name is markup in the page:\n%s", ov.body)
	}
	if !strings.Contains(ov.body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("the organization's name is not shown escaped:\n%s", ov.body)
	}
	a := c.send("POST", "/console/sign-in", url.Values{"api_id": {evil}, "api_key": {"x"}})
	if strings.Contains(a.body, "<script>alert") {
		t.Errorf("the API ID typed is markup in the form again")
	}
}

// TestConsoleInABrowser: a person signs in with the form in Chromium and
// reaches the overview; the session cookie is out of the page's scripts'
// reach, and signing out brings the form back.
// browsedPages are the pages TestConsoleInABrowser looks at, one a line.
var browsedPages = []string{
	"/console/overview",
	"/console/images",
	"/console/new",
	"/console/keys",
	"/console/og",
	"/console/proxies",
	"/console/storage-destinations",
	"/console/assistants",
	"/console/templates",
}

// axeSource is axe-core's script (npm-pinned in testdata/axe).
var axeSource = sync.OnceValues(func() ([]byte, error) {
	return os.ReadFile("testdata/axe/node_modules/axe-core/axe.min.js")
})

// shotsDir is where the browser tests save their screenshots: the test's
// artifact directory, or PICTOR_CONSOLE_SHOTS.
func shotsDir(t *testing.T) string {
	if d := os.Getenv("PICTOR_CONSOLE_SHOTS"); d != "" {
		return d
	}
	return t.ArtifactDir()
}

// lookAt checks the page in the tab as every browser test of the console
// does: nothing is wider than the window, and axe-core finds no serious
// or critical violation; then it saves a screenshot of the whole page as
// name.png.
func lookAt(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	axe, err := axeSource()
	if err != nil {
		t.Fatalf("axe-core is not installed (make test-deps runs npm ci in origin/testdata/axe): %v", err)
	}
	type look struct {
		Overflow int
		Widest   string
	}
	l, err := chromedp.Run(ctx, chromedp.Evaluate[look](`({Overflow: document.documentElement.scrollWidth - window.innerWidth,
		Widest: [...document.querySelectorAll("body *")].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)
			.map(e => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (e.className && typeof e.className == "string" ? "." + e.className.split(" ").join(".") : "")).slice(-3).join(", ")})`))
	if err != nil {
		t.Fatal(err)
	}
	if l.Overflow > 0 {
		t.Errorf("%s: the page is %d px wider than the window (%s)", name, l.Overflow, l.Widest)
	}
	type violation struct {
		ID, Impact, Help, Target string
		Nodes                    int
	}
	vs, err := chromedp.Run(ctx, chromedp.Evaluate[[]violation](string(axe)+`;
		axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations.map(v => ({ID: v.id, Impact: v.impact, Help: v.help, Target: v.nodes[0].target.join(" "), Nodes: v.nodes.length})))`,
		chromedp.EvalAsValue, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: axe: %v", name, err)
	}
	for _, v := range vs {
		if v.Impact == "serious" || v.Impact == "critical" {
			t.Errorf("%s: axe %s (%s): %s, %d elements, the first %s", name, v.ID, v.Impact, v.Help, v.Nodes, v.Target)
		}
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shotsDir(t), name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestConsoleInABrowser(t *testing.T) {
	o := startOrigin(t)
	var made struct{ ID string }
	r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &o.Owner, JSON: map[string]any{"html": "<p>a card</p>"}})
	apitest.WantStatus(t, r, 200)
	r.Decode(t, &made)
	pages := append(slices.Clone(browsedPages), "/console/images/"+made.ID)
	tab := chromiumtest.NewTab(t)
	ctx, cancel := context.WithTimeout(tab, 3*time.Minute) // a bound on a hang, not on speed: tens of pages, on a busy host
	defer cancel()
	err := chromedp.Do(ctx,
		chromedp.Navigate(o.URL+"/console"),
		chromedp.WaitVisible(chromedp.CSS(`#api_id`)),
		chromedp.SendKeys(chromedp.CSS(`#api_id`), o.Owner.APIID),
		chromedp.SendKeys(chromedp.CSS(`#api_key`), o.Owner.APIKey),
		chromedp.Submit(chromedp.CSS(`#api_key`)),
		chromedp.WaitVisible(chromedp.CSS(`#credits-used`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	type view struct{ Heading, Who, Cookies, Stored string }
	v, err := chromedp.Run(ctx, chromedp.Evaluate[view](`({Heading: document.querySelector("h1").textContent,
		Who: document.querySelector(".who").textContent, Cookies: document.cookie,
		Stored: JSON.stringify(localStorage) + JSON.stringify(sessionStorage)})`))
	if err != nil {
		t.Fatal(err)
	}
	if v.Heading != "Overview" || !strings.Contains(v.Who, o.Owner.APIID) {
		t.Errorf("after sign-in: heading %q, who %q", v.Heading, v.Who)
	}
	if v.Cookies != "" {
		t.Errorf("the page's scripts see cookies: %q", v.Cookies)
	}
	if strings.Contains(v.Stored, o.Owner.APIKey) {
		t.Error("the key is kept in the browser's storage")
	}
	// Every page, in both themes, at a desk's width and a phone's: the
	// script ran under the CSP, the style applies, and lookAt's checks.
	for _, scheme := range []string{"light", "dark"} {
		if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}); err != nil {
			t.Fatal(err)
		}
		for _, width := range []int64{1024, 390} {
			for _, path := range pages {
				name := fmt.Sprintf("%s-%s-%d", strings.ReplaceAll(strings.ReplaceAll(strings.TrimPrefix(path, "/console/"), made.ID, "detail"), "/", "-"), scheme, width)
				if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 900), chromedp.Navigate(o.URL+path),
					chromedp.WaitVisible(chromedp.CSS(`html[data-console-js] h1`))); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				background, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor`))
				if err != nil {
					t.Fatal(err)
				}
				if dark := background != "rgb(255, 255, 255)"; dark != (scheme == "dark") || background == "rgba(0, 0, 0, 0)" {
					t.Errorf("%s: the page's background is %s", name, background)
				}
				lookAt(ctx, t, name)
			}
		}
	}

	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`.signout button`)),
		chromedp.WaitVisible(chromedp.CSS(`#api_key`)),
	)
	if err != nil {
		t.Fatalf("sign out: %v", err)
	}
}

// TestConsoleKeys: the keys page lists the organization's keys, creates
// one (its secret shown once, and working over REST), shows the REST
// validation next to the field, disables and deletes keys, each through
// the REST route.
func TestConsoleKeys(t *testing.T) {
	o := startOrigin(t)
	c := &consoleClient{t: t, base: o.URL}
	c.signIn(o.Owner)
	page := c.send("GET", "/console/keys", nil)
	if page.status != 200 || !strings.Contains(page.body, o.Owner.APIID) || !strings.Contains(page.body, `id="perm-usage:read"`) {
		t.Fatalf("keys page: %d\n%s", page.status, page.body)
	}
	csrf := csrfOf(t, page.body)

	long := c.send("POST", "/console/keys", url.Values{"csrf": {csrf}, "name": {strings.Repeat("n", 300)}, "permission": {"usage:read"}})
	if long.status != http.StatusBadRequest || !strings.Contains(long.body, `aria-invalid="true"`) || !strings.Contains(long.body, `id="key-name-error"`) {
		t.Errorf("a name too long: %d\n%s", long.status, long.body)
	}
	if !strings.Contains(long.body, `id="perm-usage:read" name="permission" value="usage:read" checked`) {
		t.Error("the refused form lost its checked permissions")
	}

	made := c.send("POST", "/console/keys", url.Values{"csrf": {csrf}, "name": {`<script>alert("k")</script>`}, "permission": {"usage:read", "images:read"}})
	m := regexp.MustCompile(`id="created-api-id">([^<]+)<.*id="created-api-key">([^<]+)<`).FindStringSubmatch(strings.ReplaceAll(made.body, "\n", " "))
	if made.status != 200 || m == nil {
		t.Fatalf("create: %d\n%s", made.status, made.body)
	}
	if strings.Contains(made.body, `<script>alert("k")`) {
		t.Error("the key's name is markup in the page")
	}
	creds := apitest.Creds{APIID: m[1], APIKey: m[2]}
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/usage", Creds: &creds}), 200)
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &creds}), 403)
	if again := c.send("GET", "/console/keys", nil); strings.Contains(again.body, creds.APIKey) {
		t.Error("the secret is shown again")
	}

	var list struct {
		Data []key `json:"data"`
	}
	o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &o.Owner}).Decode(t, &list)
	var id string
	for _, k := range list.Data {
		if k.APIID == creds.APIID {
			id = k.ID
		}
	}
	if a := c.send("POST", "/console/keys/"+id+"/disable", url.Values{"csrf": {csrf}}); a.status != http.StatusSeeOther {
		t.Fatalf("disable: %d\n%s", a.status, a.body)
	}
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/usage", Creds: &creds}), 401)
	var k key
	o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys/" + id, Creds: &o.Owner}).Decode(t, &k)
	if k.Enabled || len(k.Permissions) != 2 || k.Name != `<script>alert("k")</script>` {
		t.Errorf("after disable: %+v (the name and permissions must stay)", k)
	}
	if a := c.send("POST", "/console/keys/"+id+"/enable", url.Values{"csrf": {csrf}}); a.status != http.StatusSeeOther {
		t.Fatalf("enable: %d", a.status)
	}
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/usage", Creds: &creds}), 200)
	if a := c.send("POST", "/console/keys/"+id+"/delete", url.Values{"csrf": {csrf}}); a.status != http.StatusSeeOther {
		t.Fatalf("delete: %d", a.status)
	}
	// A deleted key is disabled, not removed (spec: DELETE /v1/api-keys/{id}).
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/usage", Creds: &creds}), 401)
	if a := c.send("POST", "/console/keys/"+id+"/delete", url.Values{}); a.status != http.StatusForbidden {
		t.Errorf("delete without the form token: %d", a.status)
	}
}

// TestHostileConsoleNoBackDoor: the console has exactly its key's
// permissions: a key without api_keys:read lists no keys, a key may not
// grant what it lacks (the box is disabled, and a forged form is refused
// by the REST route), and one organization never reaches another's keys.
func TestHostileConsoleNoBackDoor(t *testing.T) {
	o := startOrigin(t)
	reader := o.createKey(t, o.Owner, map[string]any{"name": "no keys", "permissions": []string{"usage:read"}})
	c := &consoleClient{t: t, base: o.URL}
	c.signIn(*reader.creds())
	page := c.send("GET", "/console/keys", nil)
	if !strings.Contains(page.body, "lacks the api_keys:read permission") || strings.Contains(page.body, o.Owner.APIID) {
		t.Fatalf("a key without api_keys:read:\n%s", page.body)
	}
	if strings.Contains(page.body, `id="create-key"`) || !strings.Contains(page.body, "lacks the api_keys:create_update permission") {
		t.Error("a key without api_keys:create_update is offered the creation form")
	}

	o.nextWindow()
	writer := o.createKey(t, o.Owner, map[string]any{"name": "writer", "permissions": []string{"api_keys:read", "api_keys:create_update"}})
	c = &consoleClient{t: t, base: o.URL}
	c.signIn(*writer.creds())
	page = c.send("GET", "/console/keys", nil)
	if !strings.Contains(page.body, `value="usage:read" disabled`) || strings.Contains(page.body, `value="api_keys:read" disabled`) {
		t.Errorf("the boxes of permissions the key lacks are not disabled:\n%s", page.body)
	}
	forged := c.send("POST", "/console/keys", url.Values{"csrf": {csrfOf(t, page.body)}, "name": {"more"}, "permission": {"usage:read"}})
	if forged.status != http.StatusForbidden || !strings.Contains(forged.body, "Insufficient authority") {
		t.Errorf("granting a permission the key lacks: %d\n%s", forged.status, forged.body)
	}

	_, other := o.newOrg(t.Context(), t, "pro")
	c = &consoleClient{t: t, base: o.URL}
	c.signIn(other)
	page = c.send("GET", "/console/keys", nil)
	if strings.Contains(page.body, o.Owner.APIID) || strings.Contains(page.body, writer.APIID) {
		t.Error("another organization's keys are listed")
	}
	if a := c.send("POST", "/console/keys/"+writer.ID+"/disable", url.Values{"csrf": {csrfOf(t, page.body)}}); a.status != http.StatusNotFound {
		t.Errorf("disabling another organization's key: %d", a.status)
	}
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: writer.creds()}), 200)
}

// TestConsoleImages: the images page lists the organization's images
// newest first, a page at a time, with thumbnails through the edge's
// transforms, and deletes the checked ones through the batch route.
func TestConsoleImages(t *testing.T) {
	o := startOrigin(t)
	c := &consoleClient{t: t, base: o.URL}
	c.signIn(o.Owner)
	if a := c.send("GET", "/console/images", nil); a.status != 200 || !strings.Contains(a.body, `id="no-images"`) {
		t.Fatalf("no images yet: %d\n%s", a.status, a.body)
	}
	var ids []string
	for i := range 2 {
		var made struct{ ID, URL string }
		r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &o.Owner, JSON: map[string]any{"html": fmt.Sprintf("<p>%d</p>", i)}})
		apitest.WantStatus(t, r, 200)
		r.Decode(t, &made)
		ids = append(ids, made.ID)
		o.Clock.Advance(time.Second)
	}
	if ov := c.send("GET", "/console/overview", nil); !strings.Contains(ov.body, `id="credits-used">2<`) || !strings.Contains(ov.body, `id="usage-chart"`) || !strings.Contains(ov.body, ": 2 in all, at most 2 in a day.") {
		t.Errorf("overview after two images:\n%s", ov.body)
	}
	first := c.send("GET", "/console/images?count=1", nil)
	if !strings.Contains(first.body, ids[1]) || strings.Contains(first.body, ids[0]) || !strings.Contains(first.body, "/v1/image/"+ids[1]+"?width=320") {
		t.Fatalf("first page (newest):\n%s", first.body)
	}
	next := regexp.MustCompile(`href="(/console/images\?[^"]+)" rel="next"`).FindStringSubmatch(first.body)
	if next == nil {
		t.Fatalf("no link to the next page:\n%s", first.body)
	}
	second := c.send("GET", html.UnescapeString(next[1]), nil)
	if !strings.Contains(second.body, ids[0]) || strings.Contains(second.body, ids[1]) || strings.Contains(second.body, `rel="next"`) {
		t.Fatalf("second page:\n%s", second.body)
	}
	if a := c.send("POST", "/console/images/delete", url.Values{"csrf": {csrfOf(t, first.body)}, "id": {ids[0]}}); a.status != http.StatusSeeOther {
		t.Fatalf("delete: %d\n%s", a.status, a.body)
	}
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/image/" + ids[0]}), 404)
	if all := c.send("GET", "/console/images", nil); !strings.Contains(all.body, ids[1]) || strings.Contains(all.body, ids[0]) {
		t.Errorf("after the delete:\n%s", all.body)
	}

	viewer := o.createKey(t, o.Owner, map[string]any{"name": "viewer", "permissions": []string{"images:read"}})
	v := &consoleClient{t: t, base: o.URL}
	v.signIn(*viewer.creds())
	page := v.send("GET", "/console/images", nil)
	if !strings.Contains(page.body, ids[1]) || strings.Contains(page.body, `name="id"`) {
		t.Errorf("a key without images:delete is offered deletion:\n%s", page.body)
	}
	if a := v.send("POST", "/console/images/delete", url.Values{"csrf": {csrfOf(t, page.body)}, "id": {ids[1]}}); a.status != http.StatusForbidden {
		t.Errorf("a forged delete by a key without images:delete: %d", a.status)
	}
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/image/" + ids[1]}), 200)
}

// TestConsoleResources: proxies, storage destinations and OG
// configurations are listed, created, edited and deleted through their
// REST routes from a JSON editor; the route's refusals come back next to
// the editor by field path; a plan without the resource and a key
// without its permission say so.
func TestConsoleResources(t *testing.T) {
	o := startOrigin(t)
	c := &consoleClient{t: t, base: o.URL}
	c.signIn(o.Owner)
	page := c.send("GET", "/console/proxies", nil)
	if page.status != 200 || !strings.Contains(page.body, `id="resource-empty"`) || !strings.Contains(page.body, `id="resource-json"`) {
		t.Fatalf("proxies, none yet: %d\n%s", page.status, page.body)
	}
	csrf := csrfOf(t, page.body)
	save := func(path, body string) consoleAnswer {
		return c.send("POST", path, url.Values{"csrf": {csrf}, "json": {body}})
	}
	if a := save("/console/proxies", `{"name": `); a.status != http.StatusBadRequest || !strings.Contains(a.body, `id="resource-error"`) || !strings.Contains(a.body, `{&#34;name&#34;: </textarea>`) {
		t.Errorf("malformed JSON: %d\n%s", a.status, a.body)
	}
	bad := save("/console/proxies", `{"name": "", "url": "ftp://proxy.example.com"}`)
	if bad.status != http.StatusBadRequest || !strings.Contains(bad.body, "<code>url</code>") || !strings.Contains(bad.body, "<code>name</code>") {
		t.Errorf("invalid fields: %d\n%s", bad.status, bad.body)
	}
	if a := save("/console/proxies", `{"name": "office <b>", "url": "http://proxy.example.com:3128"}`); a.status != http.StatusSeeOther {
		t.Fatalf("create: %d\n%s", a.status, a.body)
	}
	var proxies struct {
		Data []struct{ ID, Name, URL string } `json:"data"`
	}
	o.do(t, apitest.Request{Method: "GET", Path: "/v1/proxies", Creds: &o.Owner}).Decode(t, &proxies)
	if len(proxies.Data) != 1 || proxies.Data[0].Name != "office <b>" {
		t.Fatalf("REST after the create: %+v", proxies.Data)
	}
	id := proxies.Data[0].ID
	// The list pages as the REST route does.
	if a := save("/console/proxies", `{"name": "second", "url": "http://proxy.example.com:3129"}`); a.status != http.StatusSeeOther {
		t.Fatalf("create a second: %d\n%s", a.status, a.body)
	}
	firstPage := c.send("GET", "/console/proxies?count=1", nil)
	more := regexp.MustCompile(`href="(/console/proxies\?[^"]+)" rel="next"`).FindStringSubmatch(firstPage.body)
	if !strings.Contains(firstPage.body, "second") || strings.Contains(firstPage.body, "office &lt;b&gt;") || more == nil {
		t.Fatalf("the first page of one:\n%s", firstPage.body)
	}
	secondPage := c.send("GET", html.UnescapeString(more[1]), nil)
	if !strings.Contains(secondPage.body, "office &lt;b&gt;") || strings.Contains(secondPage.body, ">second<") || strings.Contains(secondPage.body, `rel="next"`) {
		t.Fatalf("the second page:\n%s", secondPage.body)
	}
	o.do(t, apitest.Request{Method: "GET", Path: "/v1/proxies", Creds: &o.Owner}).Decode(t, &proxies)
	for _, p := range proxies.Data {
		if p.Name == "second" {
			apitest.WantStatus(t, o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/proxies/" + p.ID, Creds: &o.Owner}), 204)
		}
	}
	list := c.send("GET", "/console/proxies", nil)
	if !strings.Contains(list.body, "office &lt;b&gt;") || strings.Contains(list.body, "office <b>") {
		t.Errorf("the list shows the name as markup:\n%s", list.body)
	}
	edit := c.send("GET", "/console/proxies/"+id, nil)
	if !strings.Contains(edit.body, `action="/console/proxies/`+id+`"`) || !strings.Contains(edit.body, "proxy.example.com") || strings.Contains(edit.body, "created_at") {
		t.Errorf("edit page:\n%s", edit.body)
	}
	if a := save("/console/proxies/"+id, `{"name": "office 2", "url": "http://proxy.example.com:3128"}`); a.status != http.StatusSeeOther {
		t.Fatalf("update: %d\n%s", a.status, a.body)
	}
	o.do(t, apitest.Request{Method: "GET", Path: "/v1/proxies", Creds: &o.Owner}).Decode(t, &proxies)
	if proxies.Data[0].Name != "office 2" {
		t.Errorf("REST after the update: %+v", proxies.Data)
	}
	if a := c.send("POST", "/console/proxies/"+id+"/delete", url.Values{"csrf": {csrf}}); a.status != http.StatusSeeOther {
		t.Fatalf("delete: %d", a.status)
	}
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/proxies/" + id, Creds: &o.Owner}), 404)

	o.nextWindow()
	var ext struct {
		ExternalID string `json:"external_id"`
	}
	o.do(t, apitest.Request{Method: "GET", Path: "/v1/storage-destinations/aws-external-id", Creds: &o.Owner}).Decode(t, &ext)
	if dests := c.send("GET", "/console/storage-destinations", nil); ext.ExternalID == "" || !strings.Contains(dests.body, `id="resource-note">`+ext.ExternalID+"<") {
		t.Errorf("storage destinations page lacks the external id %q:\n%s", ext.ExternalID, dests.body)
	}

	if a := save("/console/og", `{"config_type": "html_css", "base_url": "https://www.example.com", "name": "site"}`); a.status != http.StatusSeeOther {
		t.Fatalf("OG configuration: %d\n%s", a.status, a.body)
	}
	if og := c.send("GET", "/console/og", nil); !strings.Contains(og.body, "https://www.example.com") {
		t.Errorf("the OG page lacks the configuration:\n%s", og.body)
	}

	_, free := o.newOrg(t.Context(), t, "free")
	f := &consoleClient{t: t, base: o.URL}
	f.signIn(free)
	if a := f.send("GET", "/console/proxies", nil); !strings.Contains(a.body, `id="resource-refused"`) || strings.Contains(a.body, `id="resource-json"`) {
		t.Errorf("a plan without proxies:\n%s", a.body)
	}
	narrow := o.createKey(t, o.Owner, map[string]any{"name": "narrow", "permissions": []string{"usage:read"}})
	n := &consoleClient{t: t, base: o.URL}
	n.signIn(*narrow.creds())
	if a := n.send("GET", "/console/og", nil); !strings.Contains(a.body, "lacks the og_configs:read permission") || strings.Contains(a.body, "www.example.com") {
		t.Errorf("a key without og_configs:read:\n%s", a.body)
	}
}

// TestConsolePlayground: the new-image form has an input for every
// parameter of the one table (imageparams/schema), so a new parameter
// appears by itself; it creates a real image through POST /v1/image; the
// route's refusals, and the form's own, go next to their fields.
func TestConsolePlayground(t *testing.T) {
	o := startOrigin(t)
	c := &consoleClient{t: t, base: o.URL}
	c.signIn(o.Owner)
	form := c.send("GET", "/console/new", nil)
	_, order := schema.Properties(schema.ForHTML | schema.ForURL)
	for _, name := range order {
		if !strings.Contains(form.body, ` name="`+name+`"`) {
			t.Errorf("the form has no input for %s", name)
		}
	}
	csrf := csrfOf(t, form.body)
	made := c.send("POST", "/console/new", url.Values{"csrf": {csrf}, "html": {`<div style="width:200px;height:100px;background:#f00"></div>`},
		"format": {"jpg"}, "device_scale": {"1"}, "block_consent_banners": {"true"}})
	m := regexp.MustCompile(`id="made-url" href="([^"]+)"`).FindStringSubmatch(made.body)
	if made.status != 200 || m == nil || !strings.Contains(made.body, "curl -u") {
		t.Fatalf("create: %d\n%s", made.status, made.body)
	}
	area := func(id string) string {
		t.Helper()
		m := regexp.MustCompile(`(?s)id="` + id + `"[^>]*>(.*?)</textarea>`).FindStringSubmatch(made.body)
		if m == nil {
			t.Fatalf("no %s in the result", id)
		}
		return html.UnescapeString(m[1])
	}
	var call struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	}
	if err := json.Unmarshal([]byte(area("made-mcp")), &call); err != nil || call.Name != "create_image" || call.Arguments["format"] != "jpg" || call.Arguments["device_scale"] != 1.0 {
		t.Errorf("MCP call %+v, %v", call, err)
	}
	ts := area("made-ts")
	if !strings.Contains(ts, "client.createImage(new CreateHtmlCssImageRequest({") || !strings.Contains(ts, `"format": "jpg"`) {
		t.Errorf("TypeScript:\n%s", ts)
	}
	// The snippet runs as it is with the pinned official client, and
	// makes the same image.
	node := exec.Command("node", "snippet.mjs")
	node.Dir = "testdata/tsclient"
	node.Env = append(os.Environ(), "PICTOR_BASE="+o.URL, "PICTOR_API_ID="+o.Owner.APIID, "PICTOR_API_KEY="+o.Owner.APIKey)
	node.Stdin = strings.NewReader(ts)
	var stderr bytes.Buffer
	node.Stderr = &stderr
	out, err := node.Output()
	if err != nil {
		t.Fatalf("the TypeScript snippet: %v\n%s", err, stderr.String())
	}
	tsURL, err := url.Parse(strings.TrimSpace(string(out)))
	if err != nil || !strings.HasPrefix(tsURL.String(), o.URL+"/v1/image/") || !strings.HasSuffix(tsURL.Path, ".jpg") {
		t.Fatalf("the TypeScript snippet printed %q", out)
	}
	byTS := o.do(t, apitest.Request{Method: "GET", Path: tsURL.Path})
	apitest.WantStatus(t, byTS, 200)
	if img, format, err := image.Decode(bytes.NewReader(byTS.Body)); err != nil || format != "jpeg" || img.Bounds().Dx() != 200 {
		t.Errorf("the TypeScript snippet's image: %v, %s", err, format)
	}
	curl := area("made-curl")
	var sent map[string]any
	if i, j := strings.Index(curl, "-d '"), strings.LastIndex(curl, "}'"); i < 0 || j < i || json.Unmarshal([]byte(curl[i+4:j+1]), &sent) != nil || !reflect.DeepEqual(sent, call.Arguments) {
		t.Errorf("the curl body is not the tool's arguments:\n%s", curl)
	}
	u, err := url.Parse(html.UnescapeString(m[1]))
	if err != nil || !strings.HasSuffix(u.Path, ".jpg") {
		t.Fatalf("image URL %q: %v", m[1], err)
	}
	got := o.do(t, apitest.Request{Method: "GET", Path: u.Path})
	apitest.WantStatus(t, got, 200)
	img, format, err := image.Decode(bytes.NewReader(got.Body))
	if err != nil || format != "jpeg" || img.Bounds().Dx() != 200 || img.Bounds().Dy() != 100 {
		t.Fatalf("the image: %v, %s, %v", err, format, img.Bounds())
	}
	if r, g, b, _ := img.At(100, 50).RGBA(); r>>8 < 200 || g>>8 > 60 || b>>8 > 60 {
		t.Errorf("the image's centre is not red: %d %d %d", r>>8, g>>8, b>>8)
	}

	bad := c.send("POST", "/console/new", url.Values{"csrf": {csrf}, "html": {"<p>x</p>"}, "viewport_width": {"0"}, "viewport_height": {"10"}})
	if bad.status != http.StatusBadRequest || !strings.Contains(bad.body, `id="opt-viewport_width-error"`) || !strings.Contains(bad.body, `name="viewport_width" type="number" min="1" max="6000" value="0"`) {
		t.Errorf("viewport_width 0: %d\n%s", bad.status, bad.body)
	}
	notJSON := c.send("POST", "/console/new", url.Values{"csrf": {csrf}, "html": {"<p>x</p>"}, "headers": {"{"}})
	if notJSON.status != http.StatusBadRequest || !strings.Contains(notJSON.body, `id="opt-headers-error">is not JSON<`) {
		t.Errorf("headers not JSON: %d\n%s", notJSON.status, notJSON.body)
	}
	none := c.send("POST", "/console/new", url.Values{"csrf": {csrf}})
	if none.status != http.StatusBadRequest {
		t.Errorf("neither html nor url: %d\n%s", none.status, none.body)
	}

	viewer := o.createKey(t, o.Owner, map[string]any{"name": "viewer", "permissions": []string{"images:read"}})
	v := &consoleClient{t: t, base: o.URL}
	v.signIn(*viewer.creds())
	if a := v.send("GET", "/console/new", nil); !strings.Contains(a.body, `id="new-denied"`) || strings.Contains(a.body, `id="new-image"`) {
		t.Errorf("a key without images:create:\n%s", a.body)
	}
}

// TestConsoleEditKeepsWhatItDoesNotShow: saving a record's editor
// unchanged changes nothing: a disabled proxy stays disabled and keeps its
// credentials (the view never shows the password, the editor keeps it by
// retain_password), and a disabled templated OG configuration keeps its
// mapping.
func TestConsoleEditKeepsWhatItDoesNotShow(t *testing.T) {
	o := startOrigin(t)
	c := &consoleClient{t: t, base: o.URL}
	c.signIn(o.Owner)
	csrf := csrfOf(t, c.send("GET", "/console/proxies", nil).body)
	tplID, _ := o.saveTemplate(t, o.Owner, map[string]any{"html": `<h1>{{title}}</h1>`})
	roundTrip := func(t *testing.T, api, page string, body map[string]any) {
		t.Helper()
		var made struct{ ID string }
		r := o.do(t, apitest.Request{Method: "POST", Path: api, Creds: &o.Owner, JSON: body})
		apitest.WantStatus(t, r, 200)
		r.Decode(t, &made)
		view := func() map[string]any {
			var v map[string]any
			o.do(t, apitest.Request{Method: "GET", Path: api + "/" + made.ID, Creds: &o.Owner}).Decode(t, &v)
			for _, k := range []string{"updated_at", "revision", "limits"} {
				delete(v, k)
			}
			return v
		}
		before := view()
		edit := c.send("GET", page+"/"+made.ID, nil)
		m := regexp.MustCompile(`(?s)id="resource-json"[^>]*>(.*?)</textarea>`).FindStringSubmatch(edit.body)
		if m == nil {
			t.Fatalf("no editor:\n%s", edit.body)
		}
		if a := c.send("POST", page+"/"+made.ID, url.Values{"csrf": {csrf}, "json": {html.UnescapeString(m[1])}}); a.status != http.StatusSeeOther {
			t.Fatalf("saving the unchanged editor: %d\n%s", a.status, a.body)
		}
		if after := view(); !reflect.DeepEqual(after, before) {
			t.Errorf("saving the unchanged editor changed the record:\nbefore %v\nafter  %v", before, after)
		}
	}
	t.Run("proxy", func(t *testing.T) {
		roundTrip(t, "/v1/proxies", "/console/proxies", map[string]any{"name": "office", "url": "http://proxy.example.com:3128",
			"bypass_hosts": []string{"internal.example.com"}, "disabled": true,
			"authentication": map[string]any{"username": "ada", "password": "s3cret"}})
	})
	o.nextWindow()
	t.Run("OG configuration", func(t *testing.T) {
		roundTrip(t, "/v1/og-configs", "/console/og", map[string]any{"config_type": "templated", "base_url": "https://www.example.com",
			"template_id": tplID, "disabled": true, "refresh_interval_s": 3600,
			"template_values_mapping": []map[string]any{{"template_key": "title", "meta_key": "og:title"}}})
	})
}

// TestHostileConsoleFormBound: every console form is read once, bounded;
// a larger one is refused with 413 before any field is used, never read
// as a form without its fields.
func TestHostileConsoleFormBound(t *testing.T) {
	o := startOrigin(t)
	c := &consoleClient{t: t, base: o.URL}
	c.signIn(o.Owner)
	csrf := csrfOf(t, c.send("GET", "/console/new", nil).body)
	big := strings.Repeat("%3C", images.MaxBody) // 3 bytes a character: past the bound
	req := "csrf=" + url.QueryEscape(csrf) + "&html=" + big
	a := c.sendRaw("POST", "/console/new", req)
	if a.status != http.StatusRequestEntityTooLarge {
		t.Errorf("a form past the bound: %d", a.status)
	}
	if a := c.sendRaw("POST", "/console/sign-in", "api_id=x&api_key="+big); a.status != http.StatusRequestEntityTooLarge {
		t.Errorf("a sign-in form past the bound: %d", a.status)
	}
	// Within the bound a large html reaches the REST route, whose own
	// limit answers (not "neither html nor url").
	over := c.sendRaw("POST", "/console/new", "csrf="+url.QueryEscape(csrf)+"&html="+strings.Repeat("a", imageparams.MaxHTMLBytes+1))
	if over.status != http.StatusBadRequest || !strings.Contains(over.body, `id="new-html-error"`) {
		t.Errorf("html past the REST limit: %d\n%.2000s", over.status, over.body)
	}
}
