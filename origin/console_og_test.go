package origin_test

import (
	"bytes"
	"context"
	"fmt"
	"image/color"
	"image/png"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/pictorhq/pictor/origin"
	"github.com/pictorhq/pictor/origin/chromiumtest"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/contract/ogplatform"
)

// hostileHead is page metadata that would be markup if the console did
// not escape it.
const hostileHead = `<meta property="og:site_name" content="&lt;script&gt;alert(1)&lt;/script&gt;">
<meta name="description" content="&quot;&gt;&lt;img src=x id=injected&gt;">`

// cardSrc finds the card images of a preview page, by platform.
var cardSrc = regexp.MustCompile(`<img src="(/console/og/cards/[^"]+/([a-z]+)\?path=[^"]+)" width="(\d+)" height="(\d+)"`)

// TestConsoleOGPreview previews a page of a loopback site through the
// console, for a configuration rendering per platform (set_viewport: the
// origin's image is the platform's) and one fitted to each platform
// (post_process: the console fits as the edge does). The page shows the
// metadata read, escaped; each crawler's card decodes at that crawler's
// size; the preview's read costs no render and no credit, the cards cost
// what the crawlers' own visits do and no more.
func TestConsoleOGPreview(t *testing.T) {
	o := startOrigin(t)
	c := &consoleClient{t: t, base: o.URL}
	c.signIn(o.Owner)
	for _, mode := range []string{"set_viewport", "post_process"} {
		t.Run(mode, func(t *testing.T) {
			s := newOGSite(t)
			s.set("/post", ogSitePage{color: "rgb(255,0,0)", extra: hostileHead})
			id, domain := o.ogConfig(t, map[string]any{"config_type": "html_css", "base_url": s.URL, "optimization_mode": mode, "refresh_interval_s": 3600})

			list := c.send("GET", "/console/og", nil)
			if !strings.Contains(list.body, `href="/console/og/`+id+`/preview"`) {
				t.Fatalf("the list links no preview of %s:\n%s", id, list.body)
			}
			empty := c.send("GET", "/console/og/"+id+"/preview", nil)
			if empty.status != 200 || !strings.Contains(empty.body, `id="og-empty"`) || !strings.Contains(empty.body, `id="og-path"`) {
				t.Fatalf("the preview form: %d\n%s", empty.status, empty.body)
			}

			renders, credits := o.rendersOK(t), creditsUsed(t, o)
			pv := c.send("GET", "/console/og/"+id+"/preview?path="+url.QueryEscape("/post"), nil)
			if pv.status != 200 {
				t.Fatalf("preview: %d\n%s", pv.status, pv.body)
			}
			if !strings.Contains(pv.body, `<dd id="og-title">Page /post</dd>`) {
				t.Errorf("the page's title is not shown:\n%s", pv.body)
			}
			if strings.Contains(pv.body, "<script>alert(1)") || strings.Contains(pv.body, `<img src=x`) || !strings.Contains(pv.body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
				t.Errorf("the page's metadata is not escaped:\n%s", pv.body)
			}
			public := o.origin.PublicURL() + "/v1/og/" + domain + "/post"
			wantTag := fmt.Sprintf(`&lt;meta property=&#34;og:image&#34; content=&#34;%s&#34;&gt;`, public)
			if !strings.Contains(pv.body, wantTag) || !strings.Contains(pv.body, `data-copy-target="#og-tags"`) || !strings.Contains(pv.body, "twitter:image") {
				t.Errorf("no og:image tag of %s with a copy button:\n%s", public, pv.body)
			}
			if r, n := o.rendersOK(t), creditsUsed(t, o); r != renders || n != credits {
				t.Errorf("the preview's read rendered %d and charged %d credits", r-renders, n-credits)
			}

			cards := cardSrc.FindAllStringSubmatch(pv.body, -1)
			if len(cards) != len(ogplatform.All) {
				t.Fatalf("%d cards, want one per platform (%d)", len(cards), len(ogplatform.All))
			}
			for _, m := range cards {
				pl, ok := ogplatform.ByName(m[2])
				if !ok || m[3] != fmt.Sprint(pl.Width) || m[4] != fmt.Sprint(pl.Height) {
					t.Fatalf("card %s shown at %s×%s", m[2], m[3], m[4])
				}
				card := c.send("GET", strings.ReplaceAll(m[1], "&amp;", "&"), nil)
				if card.status != 200 || card.header.Get("Content-Type") != "image/png" {
					t.Fatalf("card %s: %d %s\n%s", pl.Name, card.status, card.header.Get("Content-Type"), card.body)
				}
				img, err := png.Decode(strings.NewReader(card.body))
				if err != nil {
					t.Fatalf("card %s: %v", pl.Name, err)
				}
				if b := img.Bounds(); b.Dx() != pl.Width || b.Dy() != pl.Height {
					t.Errorf("card %s is %d×%d, want %d×%d", pl.Name, b.Dx(), b.Dy(), pl.Width, pl.Height)
				}
				if got := color.RGBAModel.Convert(img.At(pl.Width/2, pl.Height/2)).(color.RGBA); got.R < 240 || got.G > 16 || got.B > 16 {
					t.Errorf("card %s: centre %v, want the page's red", pl.Name, got)
				}
			}
			// The crawlers' own visits cost what they would have cost: one
			// image per platform with set_viewport, one in all with
			// post_process; a crawler coming after the preview renders
			// nothing more.
			want := 1
			if mode == "set_viewport" {
				want = len(ogplatform.All)
			}
			if n := creditsUsed(t, o) - credits; n != want {
				t.Errorf("the cards charged %d credits, want %d", n, want)
			}
			renders = o.rendersOK(t)
			for _, pl := range ogplatform.All {
				r := o.do(t, apitest.Request{Method: "GET", Path: "/v1/og/" + domain + "/post", Header: map[string]string{"User-Agent": pl.UserAgent}})
				apitest.WantStatus(t, r, 200)
			}
			if n := o.rendersOK(t) - renders; n != 0 {
				t.Errorf("the crawlers after the preview rendered %d images", n)
			}
		})
	}
}

// TestConsoleOGPreviewHostilePaths: a path a person types is checked
// before anything is read, with the reason next to the field and the path
// escaped in the form; the card route refuses the same paths and unknown
// crawlers with an image saying why.
func TestConsoleOGPreviewHostilePaths(t *testing.T) {
	o := startOrigin(t)
	s := newOGSite(t)
	id, domain := o.ogConfig(t, map[string]any{"config_type": "html_css", "base_url": s.URL})
	c := &consoleClient{t: t, base: o.URL}
	c.signIn(o.Owner)
	for _, tc := range []struct{ name, path, want string }{
		{"traversal", "/blog/../../etc/passwd", "must not hold . or .. segments"},
		{"encoded traversal", "/a/%2e%2e/b", "must not hold . or .. segments"},
		{"absolute URL", "https://evil.example/x", "not a URL"},
		{"scheme-relative", "//evil.example/x", "without a scheme or host"},
		{"relative", "post", "starting with /"},
		{"query", "/post?x=1", "without a query"},
		{"control character", "/a%00b", "not a valid page path"},
		{"markup", `/"><script>alert(1)</script>?`, "without a query"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := c.send("GET", "/console/og/"+id+"/preview?path="+url.QueryEscape(tc.path), nil)
			if a.status != http.StatusBadRequest || !strings.Contains(a.body, `id="og-path-error"`) || !strings.Contains(a.body, tc.want) || !strings.Contains(a.body, `aria-invalid="true"`) {
				t.Errorf("%q: %d\n%s", tc.path, a.status, a.body)
			}
			if strings.Contains(a.body, "<script>alert(1)") {
				t.Errorf("%q is markup in the page", tc.path)
			}
			card := c.send("GET", "/console/og/cards/"+domain+"/twitter?path="+url.QueryEscape(tc.path), nil)
			if card.status != http.StatusBadRequest || card.header.Get("Content-Type") != "image/svg+xml" || strings.Contains(card.body, "<script>") {
				t.Errorf("card of %q: %d %s\n%s", tc.path, card.status, card.header.Get("Content-Type"), card.body)
			}
		})
	}
	select {
	case p := <-s.requests:
		t.Errorf("the site was asked for %s", p)
	default:
	}
	unknown := c.send("GET", "/console/og/cards/"+domain+"/myspace?path=/post", nil)
	if unknown.status != http.StatusNotFound || unknown.header.Get("Content-Type") != "image/svg+xml" {
		t.Errorf("unknown crawler: %d %s", unknown.status, unknown.header.Get("Content-Type"))
	}
	// Signed out, the card route is the sign-in form's.
	out := (&consoleClient{t: t, base: o.URL}).send("GET", "/console/og/cards/"+domain+"/twitter?path=/post", nil)
	if out.status != http.StatusSeeOther {
		t.Errorf("a card without a session: %d", out.status)
	}
}

// TestHostileConsoleOGPreviewLimited: previews and cards count against the
// address's allowance for new pages of the configuration, as crawlers'
// visits do: past it the preview says so (429) and the site is not read;
// a key without og_configs:read sees the permission named, not the page.
func TestHostileConsoleOGPreviewLimited(t *testing.T) {
	o := startOrigin(t, func(c *origin.Config) { c.OG.ClientRate, c.OG.ClientBurst = 1, 2 })
	s := newOGSite(t)
	id, domain := o.ogConfig(t, map[string]any{"config_type": "html_css", "base_url": s.URL})
	c := &consoleClient{t: t, base: o.URL}
	c.signIn(o.Owner)
	for i, path := range []string{"/a", "/b"} {
		if a := c.send("GET", "/console/og/"+id+"/preview?path="+path, nil); a.status != 200 {
			t.Fatalf("preview %d: %d\n%s", i, a.status, a.body)
		}
	}
	s.drain()
	refused := c.send("GET", "/console/og/"+id+"/preview?path=/c", nil)
	if refused.status != http.StatusTooManyRequests || refused.header.Get("Retry-After") == "" || !strings.Contains(refused.body, `id="og-refused"`) || !strings.Contains(refused.body, "new pages of this OG configuration") {
		t.Errorf("a preview past the allowance: %d\n%s", refused.status, refused.body)
	}
	card := c.send("GET", "/console/og/cards/"+domain+"/twitter?path=/c", nil)
	if card.status != http.StatusTooManyRequests || card.header.Get("Retry-After") == "" {
		t.Errorf("a card past the allowance: %d, Retry-After %q", card.status, card.header.Get("Retry-After"))
	}
	select {
	case p := <-s.requests:
		t.Errorf("the site was read past the allowance: %s", p)
	default:
	}

	reader := o.createKey(t, o.Owner, map[string]any{"name": "usage only", "permissions": []string{"usage:read"}})
	r := &consoleClient{t: t, base: o.URL}
	r.signIn(*reader.creds())
	denied := r.send("GET", "/console/og/"+id+"/preview?path=/a", nil)
	if !strings.Contains(denied.body, `id="og-denied"`) || !strings.Contains(denied.body, "og_configs:read") || strings.Contains(denied.body, "Page /a") {
		t.Errorf("a key without og_configs:read: %d\n%s", denied.status, denied.body)
	}
}

// TestConsoleOGPreviewREST: the preview route answers the metadata and
// one card per platform, with each platform's User-Agent, and refuses a
// missing path naming the field.
func TestConsoleOGPreviewREST(t *testing.T) {
	o := startOrigin(t)
	s := newOGSite(t)
	id, domain := o.ogConfig(t, map[string]any{"config_type": "html_css", "base_url": s.URL})
	r := o.do(t, apitest.Request{Method: "GET", Path: "/v1/og-configs/" + id + "/preview?path=/blog/caf%C3%A9", Creds: &o.Owner})
	apitest.WantStatus(t, r, 200)
	var v struct {
		Path     string
		URL      string
		Metadata struct {
			Title   string
			OGTitle string `json:"og_title"`
		}
		Cards []struct {
			Platform      string
			UserAgent     string `json:"user_agent"`
			Width, Height int
		}
	}
	r.Decode(t, &v)
	if v.Path != "/blog/caf%C3%A9" || v.URL != o.origin.PublicURL()+"/v1/og/"+domain+"/blog/caf%C3%A9" || v.Metadata.Title != "Page /blog/café" || v.Metadata.OGTitle != "Title of /blog/café" {
		t.Errorf("preview: %+v", v)
	}
	if len(v.Cards) != len(ogplatform.All) {
		t.Fatalf("cards: %+v", v.Cards)
	}
	for i, pl := range ogplatform.All {
		if c := v.Cards[i]; c.Platform != pl.Name || c.UserAgent != pl.UserAgent || c.Width != pl.Width || c.Height != pl.Height {
			t.Errorf("card %d: %+v, want %+v", i, c, pl)
		}
	}
	missing := o.do(t, apitest.Request{Method: "GET", Path: "/v1/og-configs/" + id + "/preview", Creds: &o.Owner})
	apitest.WantStatus(t, missing, 400)
	if !bytes.Contains(missing.Body, []byte(`"path":"path"`)) {
		t.Errorf("a missing path: %s", missing.Body)
	}
}

// TestConsoleOGPreviewInABrowser looks at a preview in Chromium at a
// desk's width and a phone's, in both themes: every card loads, nothing
// overflows, axe-core finds no serious or critical violation; the
// screenshots are saved.
func TestConsoleOGPreviewInABrowser(t *testing.T) {
	o := startOrigin(t)
	s := newOGSite(t)
	s.set("/post", ogSitePage{color: "rgb(40,120,200)", extra: hostileHead})
	id, _ := o.ogConfig(t, map[string]any{"config_type": "html_css", "base_url": s.URL, "name": "blog"})
	tab := chromiumtest.NewTab(t)
	ctx, cancel := context.WithTimeout(tab, 2*time.Minute)
	defer cancel()
	err := chromedp.Do(ctx,
		chromedp.Navigate(o.URL+"/console"),
		chromedp.WaitVisible(chromedp.CSS(`#api_id`)),
		chromedp.SendKeys(chromedp.CSS(`#api_id`), o.Owner.APIID),
		chromedp.SendKeys(chromedp.CSS(`#api_key`), o.Owner.APIKey),
		chromedp.Submit(chromedp.CSS(`#api_key`)),
		chromedp.WaitVisible(chromedp.CSS(`#credits-used`)),
		// The form, by keyboard: type the path and press Enter.
		chromedp.Navigate(o.URL+"/console/og/"+id+"/preview"),
		chromedp.WaitVisible(chromedp.CSS(`#og-path`)),
		chromedp.SendKeys(chromedp.CSS(`#og-path`), "/post\r"),
		chromedp.WaitVisible(chromedp.CSS(`#og-cards`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, scheme := range []string{"light", "dark"} {
		if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}); err != nil {
			t.Fatal(err)
		}
		for _, width := range []int64{1024, 390} {
			name := fmt.Sprintf("og-preview-%s-%d", scheme, width)
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 900), chromedp.Reload(),
				chromedp.WaitVisible(chromedp.CSS(`html[data-console-js] #og-cards`))); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			// Every card loads.
			if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`[...document.querySelectorAll("#og-cards img")].every(i => i.complete && i.naturalWidth > 0)`,
				chromedp.WithPollingTimeout(90*time.Second))); err != nil {
				t.Fatalf("%s: the cards did not load: %v", name, err)
			}
			type look struct {
				Cards, Loaded, Injected int
				Title                   string
			}
			l, err := chromedp.Run(ctx, chromedp.Evaluate[look](`({Cards: document.querySelectorAll("#og-cards img").length,
				Loaded: [...document.querySelectorAll("#og-cards img")].filter(i => String(i.naturalWidth) === i.getAttribute("width") && String(i.naturalHeight) === i.getAttribute("height")).length,
				Injected: document.querySelectorAll("#injected, #og-metadata script").length,
				Title: document.querySelector("#og-title").textContent})`))
			if err != nil {
				t.Fatal(err)
			}
			// post_process, the default: each card is fitted to its crawler's size.
			if l.Cards != len(ogplatform.All) || l.Loaded != l.Cards || l.Injected != 0 || l.Title != "Page /post" {
				t.Errorf("%s: %+v", name, l)
			}
			lookAt(ctx, t, name)
		}
	}
}
