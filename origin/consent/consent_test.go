package consent

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

func mustCompile(t testing.TB, list string) *ruleset {
	t.Helper()
	rs, err := compile(strings.NewReader(list))
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// hasSelector reports whether sel is one of the selectors of a hiding rule
// in css (rules are one a line, selectors joined by commas).
func hasSelector(css, sel string) bool {
	for _, line := range strings.Split(css, "\n") {
		head, _, ok := strings.Cut(line, "{display:none!important;"+markerProperty+":1}")
		if !ok {
			continue
		}
		for _, s := range strings.Split(head, ",") {
			if s == sel {
				return true
			}
		}
	}
	return false
}

const testList = `[Adblock Plus 2.0]
! a comment with ## in it
##.cookie-banner
###consent-overlay
##div[class^="cookie-"][data-x="a,b"]
example.com##.only-example
example.com,~shop.example.com##.example-not-shop
~skip.org##.generic-but-skip
sony.*##.sony-notice
##.cancelled-everywhere
#@#.cancelled-everywhere
##.cancelled-on-news
news.example.net#@#.cancelled-on-news
example.com##html:style(overflow: auto !important)
example.com##.gone:remove()
example.com##.x:has-text(Cookies)
example.com#?#.y:-abp-has(.z)
example.com#$#.w { display: none }
example.com##+js(set-constant, a, b)
example.com##^script:has-text(consent)
example.com##.bad{color:red}
example.com##.bad2 /* comment */
example.com##.style-bad:style(background: url(https://x))
Bad Domain##.bad3
`

func TestCosmeticRules(t *testing.T) {
	rs := mustCompile(t, testList)
	tests := []struct {
		name, host, sel string
		want            bool
	}{
		{name: "generic class", host: "a.test", sel: ".cookie-banner", want: true},
		{name: "generic id", host: "", sel: "#consent-overlay", want: true},
		{name: "attribute with comma", host: "a.test", sel: `div[class^="cookie-"][data-x="a,b"]`, want: false},
		{name: "specific on its host", host: "example.com", sel: ".only-example", want: true},
		{name: "specific on a subdomain", host: "www.example.com", sel: ".only-example", want: true},
		{name: "specific elsewhere", host: "example.org", sel: ".only-example", want: false},
		{name: "specific on a lookalike", host: "notexample.com", sel: ".only-example", want: false},
		{name: "specific without host", host: "", sel: ".only-example", want: false},
		{name: "excluded subdomain", host: "shop.example.com", sel: ".example-not-shop", want: false},
		{name: "included parent", host: "www.example.com", sel: ".example-not-shop", want: true},
		{name: "generic with exclusion", host: "a.test", sel: ".generic-but-skip", want: true},
		{name: "generic excluded host", host: "www.skip.org", sel: ".generic-but-skip", want: false},
		{name: "entity .com", host: "www.sony.com", sel: ".sony-notice", want: true},
		{name: "entity .co.uk", host: "sony.co.uk", sel: ".sony-notice", want: true},
		{name: "entity mismatch", host: "sony.example.co.uk", sel: ".sony-notice", want: false},
		{name: "entity not a label", host: "mysony.com", sel: ".sony-notice", want: false},
		{name: "generic exception", host: "a.test", sel: ".cancelled-everywhere", want: false},
		{name: "host exception", host: "news.example.net", sel: ".cancelled-on-news", want: false},
		{name: "host exception elsewhere", host: "example.net", sel: ".cancelled-on-news", want: true},
		{name: "remove is hide", host: "example.com", sel: ".gone", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			css := rs.css(tt.host)
			// The attribute selector holds a comma, which hasSelector cannot
			// split; look for it whole.
			got := hasSelector(css, tt.sel) || strings.Contains(css, tt.sel) && strings.Contains(tt.sel, ",")
			if tt.name == "attribute with comma" {
				got, tt.want = strings.Contains(css, tt.sel), true
			}
			if got != tt.want {
				t.Fatalf("CSS(%q) has %s: %v, want %v\n%s", tt.host, tt.sel, got, tt.want, css)
			}
		})
	}
	if css := rs.css("example.com"); !strings.Contains(css, "html{overflow: auto !important}\n") {
		t.Errorf("style rule missing:\n%s", css)
	}
	if css := rs.css("a.test"); strings.Contains(css, "overflow") {
		t.Errorf("style rule for example.com leaked:\n%s", css)
	}
	for _, bad := range []string{"has-text", "abp-has", ".w", "set-constant", "script", ".bad", "url(", "bad3"} {
		if css := rs.css("example.com"); strings.Contains(css, bad) {
			t.Errorf("skipped rule %q reached the CSS:\n%s", bad, css)
		}
	}
	if rs.stats.Skipped != 9 {
		t.Errorf("skipped %d rules, want 9", rs.stats.Skipped)
	}
}

func TestCosmeticExceptionsDisable(t *testing.T) {
	rs := mustCompile(t, `##.generic
quiet.test##.specific
@@||quiet.test^$elemhide
@@||plain.test^$generichide
plain.test##.plain-specific
`)
	if css := rs.css("www.quiet.test"); css != "" {
		t.Errorf("elemhide exception: CSS %q, want none", css)
	}
	css := rs.css("plain.test")
	if hasSelector(css, ".generic") || !hasSelector(css, ".plain-specific") {
		t.Errorf("generichide exception: CSS %q, want only the specific rule", css)
	}
	if !hasSelector(rs.css("other.test"), ".generic") {
		t.Error("exceptions leaked to other hosts")
	}
}

func TestCSSBounded(t *testing.T) {
	var b strings.Builder
	for i := range 40000 {
		fmt.Fprintf(&b, "##.some-long-generic-cookie-banner-class-%d\n", i)
	}
	b.WriteString("big.test##.specific\n")
	rs := mustCompile(t, b.String())
	for _, host := range []string{"", "big.test"} {
		css := rs.css(host)
		if len(css) > MaxCSS || len(css) < MaxCSS-4096 {
			t.Errorf("CSS(%q) has %d bytes, want just under %d", host, len(css), MaxCSS)
		}
		if !strings.HasSuffix(css, "}\n") {
			t.Errorf("CSS(%q) cut inside a rule", host)
		}
	}
	if !strings.HasPrefix(rs.css("big.test"), ".specific{") {
		t.Error("host rules do not come first")
	}
}

// TestEmbeddedCSS checks the shipped rule set.
func TestEmbeddedCSS(t *testing.T) {
	rs := rules()
	if rs == nil {
		t.Fatal("embedded rules did not compile")
	}
	if len(rs.generic) < 10000 || rs.stats.Specific < 1000 || rs.stats.Network < 40 {
		t.Fatalf("rule set too small: %+v, %d generic", rs.stats, len(rs.generic))
	}
	if rs.stats.Skipped > 20 {
		t.Errorf("%d rules skipped", rs.stats.Skipped)
	}
	tests := []struct {
		name, host, sel string
		want            bool
	}{
		{name: "EasyList generic id", host: "www.example.com", sel: "#onetrust-banner-sdk", want: true},
		{name: "EasyList generic class", host: "www.example.com", sel: ".cc-banner", want: true},
		{name: "Pictor CMP root", host: "www.example.com", sel: "#CybotCookiebotDialog", want: true},
		{name: "EasyList host exception", host: "isarradweg.de", sel: ".CookieBar", want: false},
		{name: "same selector elsewhere", host: "example.org", sel: ".CookieBar", want: true},
		{name: "escaped selector", host: "statmuse.com", sel: `.bottom-\[50px\]`, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := hasSelector(CSS(tt.host), tt.sel); got != tt.want {
				t.Fatalf("CSS(%q) has %s: %v, want %v", tt.host, tt.sel, got, tt.want)
			}
		})
	}
	for _, host := range []string{"", "www.example.com", "www.sony.co.uk", "rai.it", "EXAMPLE.COM:8443"} {
		css := CSS(host)
		if len(css) == 0 || len(css) > MaxCSS {
			t.Errorf("CSS(%q) has %d bytes, want 1 to %d", host, len(css), MaxCSS)
		}
		if strings.Count(css, "{") != strings.Count(css, "}") || strings.Contains(css, "</") {
			t.Errorf("CSS(%q) is not well-formed", host)
		}
	}
	if CSS("www.example.com") != CSS("WWW.Example.COM.") {
		t.Error("host not normalized")
	}
}

func TestNetworkRules(t *testing.T) {
	rs := mustCompile(t, `
||cmp.test^
||cdn.test/consent/
||paths.test/*/loader.js|
|https://exact.test/a.js|
/cookieconsent.min.js
||partial.ho
@@||cmp.test/allowed^
||Case.test/UPPER$match-case
||typed.test^$script,third-party
||firstparty.test^$~third-party
||scoped.test^$domain=example.com
/regex\.test/
||unknown.test^$redirect=noop.js
`)
	tests := []struct {
		name, url string
		want      bool
	}{
		{name: "host", url: "https://cmp.test/loader.js", want: true},
		{name: "host root", url: "https://cmp.test", want: true},
		{name: "subdomain", url: "https://cdn.eu.cmp.test/x", want: true},
		{name: "port", url: "https://cmp.test:8443/x", want: true},
		{name: "upper case", url: "HTTPS://CMP.TEST/X", want: true},
		{name: "userinfo", url: "https://user:pw@cmp.test/x", want: true},
		{name: "websocket", url: "wss://cmp.test/socket", want: true},
		{name: "lookalike host", url: "https://notcmp.test/x", want: false},
		{name: "host as a prefix", url: "https://cmp.test.evil.example/x", want: false},
		{name: "host in userinfo", url: "https://cmp.test@evil.example/x", want: false},
		{name: "host in query", url: "https://example.com/?u=https://cmp.test/", want: false},
		{name: "exception", url: "https://cmp.test/allowed/x.js", want: false},
		{name: "exception is a path", url: "https://cmp.test/allowedness", want: true},
		{name: "path", url: "https://cdn.test/consent/v2.js", want: true},
		{name: "other path", url: "https://cdn.test/app.js", want: false},
		{name: "wildcard", url: "https://paths.test/v1/2/loader.js", want: true},
		{name: "end anchor", url: "https://paths.test/v1/loader.js?x", want: false},
		{name: "start and end anchors", url: "https://exact.test/a.js", want: true},
		{name: "start anchor other scheme", url: "http://exact.test/a.js", want: false},
		{name: "substring", url: "https://static.site.test/js/cookieconsent.min.js?v=3", want: true},
		{name: "partial host", url: "https://partial.host.test/", want: true},
		{name: "partial host not at a label", url: "https://xpartial.host.test/", want: false},
		{name: "match case", url: "https://case.test/UPPER", want: true},
		{name: "match case differs", url: "https://case.test/upper", want: false},
		{name: "type option ignored", url: "https://typed.test/a.png", want: true},
		{name: "first-party rule skipped", url: "https://firstparty.test/x", want: false},
		{name: "domain rule skipped", url: "https://scoped.test/x", want: false},
		{name: "regex skipped", url: "https://regex.test/x", want: false},
		{name: "unknown option skipped", url: "https://unknown.test/x", want: false},
		{name: "data URL", url: "data:text/html,https://cmp.test/", want: false},
		{name: "blob URL", url: "blob:https://cmp.test/uuid", want: false},
		{name: "relative", url: "/cmp.test/x", want: false},
		{name: "empty", url: "", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rs.blocks(tt.url); got != tt.want {
				t.Fatalf("blocks(%q) = %v, want %v", tt.url, got, tt.want)
			}
		})
	}
	if rs.stats.Skipped != 4 || rs.stats.Network != 8 || rs.stats.NetworkExceptions != 1 {
		t.Errorf("stats %+v", rs.stats)
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		end, want  bool
	}{
		{"^", "", false, true},
		{"^", "/x", false, true},
		{"^", ":443/", false, true},
		{"^", "x", false, false},
		{"^", ".x", false, false},
		{"/a^", "/a?b", false, true},
		{"/a^", "/ab", false, false},
		{"/a*b", "/a/x/b", true, true},
		{"/a*b", "/a/x/bc", true, false},
		{"*", "", true, true},
		{"/a", "/abc", false, true},
		{"/a", "/abc", true, false},
	}
	for _, tt := range tests {
		if got := match(tt.pattern, tt.s, tt.end); got != tt.want {
			t.Errorf("match(%q, %q, %v) = %v, want %v", tt.pattern, tt.s, tt.end, got, tt.want)
		}
	}
}

// cmpURLs are real addresses of consent tools' loaders.
var cmpURLs = []string{
	"https://cdn.cookielaw.org/scripttemplates/otSDKStub.js",
	"https://cdn.cookielaw.org/consent/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0/OtAutoBlock.js",
	"https://geolocation.onetrust.com/cookieconsentpub/v1/geo/location",
	"https://consent.cookiebot.com/uc.js",
	"https://consentcdn.cookiebot.com/consentconfig/0f1e2d3c/example.com/configuration.js",
	"https://app.usercentrics.eu/browser-ui/latest/loader.js",
	"https://web.cmp.usercentrics.eu/ui/loader.js",
	"https://privacy-proxy.usercentrics.eu/latest/uc-block.bundle.js",
	"https://sdk.privacy-center.org/0f1e2d3c/loader.js?target=www.example.com",
	"https://cmp.quantcast.com/choice/AbCdEf/www.example.com/choice.js?tag_version=V2",
	"https://quantcast.mgr.consensu.org/v38/cmp.js",
	"https://cmp.inmobi.com/choice/AbCdEf/www.example.com/choice.js",
	"https://cdn.privacy-mgmt.com/wrapperMessagingWithoutDetection.js",
	"https://cdn.privacy-mgmt.com/index.html?message_id=123",
	"https://consent.trustarc.com/notice?domain=example.com&c=teconsent",
	"https://cdn.consentmanager.net/delivery/autoblocking/abc123.js",
	"https://gdpr-wrapper.privacymanager.io/gdpr/0f1e2d3c/gdpr-liveramp.js",
	"https://fundingchoicesmessages.google.com/i/pub-1234567890123456?ers=1",
	"https://cmp.osano.com/AzZdRbSORDG/0f1e2d3c/osano.js",
	"https://cdn.iubenda.com/cs/iubenda_cs.js",
	"https://cdn-cookieyes.com/client_data/0f1e2d3c/script.js",
	"https://cdn.cookie-script.com/s/0f1e2d3c.js",
	"https://static.axept.io/sdk.js",
	"https://app.termly.io/resource-blocker/0f1e2d3c?autoBlock=on",
	"https://cdnjs.cloudflare.com/ajax/libs/cookieconsent2/3.1.1/cookieconsent.min.js",
	"https://cdn.jsdelivr.net/npm/cookieconsent@3/build/cookieconsent.min.js",
}

// innocentURLs must never be blocked: vendors' own sites, common CDNs,
// addresses that merely mention consent.
var innocentURLs = []string{
	"https://www.cookiebot.com/en/",
	"https://www.onetrust.com/products/cookie-consent/",
	"https://www.usercentrics.com/",
	"https://www.didomi.io/",
	"https://www.quantcast.com/",
	"https://www.iubenda.com/privacy-policy/12345678",
	"https://cdn.iubenda.com/iubenda.js",
	"https://app.termly.io/dashboard",
	"https://example.com/",
	"https://example.com/blog/the-best-cookies-recipe.html",
	"https://example.com/?ref=cdn.cookielaw.org",
	"https://consent.example.com/",
	"https://www.google.com/search?q=cookie+consent",
	"https://fonts.googleapis.com/css2?family=Inter",
	"https://www.googletagmanager.com/gtag/js?id=G-XXXX",
	"https://cdn.jsdelivr.net/npm/bootstrap@5.3.3/dist/js/bootstrap.bundle.min.js",
	"https://cdnjs.cloudflare.com/ajax/libs/jquery/3.7.1/jquery.min.js",
	"https://unpkg.com/react@18/umd/react.production.min.js",
	"https://news.ycombinator.com/",
	"https://en.wikipedia.org/wiki/HTTP_cookie",
}

func TestBlockURL(t *testing.T) {
	for _, u := range cmpURLs {
		if !BlockURL(u) {
			t.Errorf("BlockURL(%q) = false, want true", u)
		}
	}
	for _, u := range innocentURLs {
		if BlockURL(u) {
			t.Errorf("BlockURL(%q) = true, want false", u)
		}
	}
}

func TestBlockPatterns(t *testing.T) {
	ps := BlockPatterns()
	if len(ps) < 40 {
		t.Fatalf("%d patterns", len(ps))
	}
	for _, p := range ps {
		if !strings.HasPrefix(p, "*://{*.}?") || strings.ContainsAny(p, " ^|") {
			t.Errorf("malformed pattern %q", p)
		}
	}
	rs := mustCompile(t, "||a.test^\n||b.test/x/*.js|\n||c.test/x^y\n||d.test:8080/\n@@||e.test/ok\n||e.test^\n")
	got := strings.Join(rs.patterns(), " ")
	want := `*://{*.}?a.test:*/* *://{*.}?b.test:*/x/*.js`
	if got != want {
		t.Errorf("patterns %q, want %q", got, want)
	}
}

// TestHammer reads the rule set from many goroutines at once; run with -race.
func TestHammer(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 20 {
				u := cmpURLs[(g+i)%len(cmpURLs)]
				if !BlockURL(u) {
					t.Errorf("BlockURL(%q) = false", u)
				}
				if i%5 == 0 && len(CSS([]string{"", "example.com", "rai.it", "sony.de"}[g%4])) == 0 {
					t.Error("empty CSS")
				}
				_ = Script()
			}
		})
	}
	wg.Wait()
}

func FuzzCompile(f *testing.F) {
	for _, s := range strings.Split(testList, "\n") {
		f.Add(s, "example.com")
	}
	f.Fuzz(func(t *testing.T, line, host string) {
		rs, err := compile(strings.NewReader(line))
		if err != nil {
			return
		}
		css := rs.css(normalizeHost(host))
		if strings.Count(css, "{") != strings.Count(css, "}") || strings.Contains(css, "</") || strings.Contains(css, "/*") {
			t.Fatalf("unsafe CSS from %q: %q", line, css)
		}
		rs.blocks("https://" + host + "/" + line)
		rs.patterns()
	})
}

func FuzzBlockURL(f *testing.F) {
	for _, u := range append(cmpURLs, innocentURLs...) {
		f.Add(u)
	}
	f.Fuzz(func(t *testing.T, u string) {
		BlockURL(u)
		splitURL(u)
	})
}

func BenchmarkBlockURL(b *testing.B) {
	rules()
	urls := append(append([]string{}, cmpURLs...), innocentURLs...)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		BlockURL(urls[i%len(urls)])
		i++
	}
}

func BenchmarkCSS(b *testing.B) {
	rules()
	b.ReportAllocs()
	for b.Loop() {
		CSS("www.example.com")
	}
}
