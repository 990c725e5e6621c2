package edge

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/contract/ogplatform"
)

// TestOGVaryUserAgent: every OG answer of the edge says it depends on the
// User-Agent, whatever path made it: a miss, a fresh and a stale hit, a
// HEAD, a 304, an edge without a cache, the origin's error and the edge's
// own; Cache-Control is what it was without it.
func TestOGVaryUserAgent(t *testing.T) {
	o := newOGOrigin(t, contract.OGFit)
	clock := ogClock()
	_, base := newOGEdge(t, o.URL, clock, nil)
	_, uncached := newOGEdge(t, o.URL, clock, func(c *Config) { c.Standalone = true })
	path := contract.OGPrefix + ogDomain + "/post"
	send := func(t *testing.T, base, method, path string, header ...string) *apitest.Response {
		t.Helper()
		h := map[string]string{"User-Agent": uaTwitter}
		for i := 0; i+1 < len(header); i += 2 {
			h[header[i]] = header[i+1]
		}
		return apitest.Do(t, base, apitest.Request{Method: method, Path: path, Header: h})
	}
	miss := send(t, base, "GET", path)
	etag := miss.Header.Get("ETag")
	for _, tc := range []struct {
		name   string
		run    func(t *testing.T) *apitest.Response
		status int
		cc     string // "" for none
	}{
		{"miss", func(*testing.T) *apitest.Response { return miss }, 200, ogCC(ogMaxAgeS)},
		{"fresh hit", func(t *testing.T) *apitest.Response { return send(t, base, "GET", path) }, 200, ogCC(ogMaxAgeS)},
		{"head", func(t *testing.T) *apitest.Response { return send(t, base, "HEAD", path) }, 200, ogCC(ogMaxAgeS)},
		{"304", func(t *testing.T) *apitest.Response { return send(t, base, "GET", path, "If-None-Match", etag) }, 304, ogCC(ogMaxAgeS)},
		{"conditional head", func(t *testing.T) *apitest.Response { return send(t, base, "HEAD", path, "If-None-Match", etag) }, 304, ogCC(ogMaxAgeS)},
		{"without a cache", func(t *testing.T) *apitest.Response { return send(t, uncached, "GET", path) }, 200, ogCC(ogMaxAgeS)},
		{"without a cache, 304", func(t *testing.T) *apitest.Response {
			return send(t, uncached, "GET", path, "If-None-Match", send(t, uncached, "GET", path).Header.Get("ETag"))
		}, 304, ogCC(ogMaxAgeS)},
		{"unknown domain id, the edge's own 404", func(t *testing.T) *apitest.Response {
			return send(t, base, "GET", contract.OGPrefix+"not.a.domain/post")
		}, 404, ""},
		{"malformed path, the edge's own 400", func(t *testing.T) *apitest.Response {
			return send(t, base, "GET", contract.OGPrefix+ogDomain+"/"+strings.Repeat("a", 2100))
		}, 400, ""},
		{"the origin's refusal", func(t *testing.T) *apitest.Response {
			o.set(func(o *ogOrigin) { o.fail, o.retryAfter = http.StatusTooManyRequests, "7" })
			defer o.set(func(o *ogOrigin) { o.fail, o.retryAfter = 0, "" })
			return send(t, base, "GET", path+"-new")
		}, 429, "no-store"},
		{"stale hit", func(t *testing.T) *apitest.Response {
			clock.Advance((ogMaxAgeS + 1) * time.Second)
			return send(t, base, "GET", path)
		}, 200, ogCC(0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.run(t)
			apitest.WantStatus(t, r, tc.status)
			if v := r.Header.Values("Vary"); len(v) != 1 || v[0] != "User-Agent" {
				t.Fatalf("Vary: %q, want User-Agent", v)
			}
			if got := r.Header.Get("Cache-Control"); got != tc.cc {
				t.Fatalf("Cache-Control %q, want %q", got, tc.cc)
			}
		})
	}
}

// docCDNUserAgents reads the User-Agent values a CDN in front of the edge
// sets for each platform once it has matched the crawler's own, from the
// table of docs/operations.md ("A CDN in front of OG images"): each must
// make the edge pick that platform, so that the CDN's key and the edge's
// answer agree.
func docCDNUserAgents(t *testing.T) map[string]string {
	t.Helper()
	doc, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "| platform | User-Agent to set |")
	if start < 0 {
		t.Fatal("docs/operations.md has no table of the User-Agents a CDN sets")
	}
	table := text[start:]
	if end := strings.Index(table, "\n\n"); end >= 0 {
		table = table[:end]
	}
	uas := map[string]string{}
	for _, row := range strings.Split(table, "\n")[2:] {
		cols := strings.Split(row, "|")
		if len(cols) != 4 {
			t.Fatalf("malformed row %q", row)
		}
		uas[strings.TrimSpace(cols[1])] = strings.Trim(strings.TrimSpace(cols[2]), "`")
	}
	return uas
}

// TestOGCDNUserAgents: the documented User-Agent of every platform is read
// as that platform, and a crawler's own User-Agent and its platform's
// documented one share the edge's entry.
func TestOGCDNUserAgents(t *testing.T) {
	cdnUserAgents := docCDNUserAgents(t)
	for _, p := range ogplatform.All {
		ua, ok := cdnUserAgents[p.Name]
		if !ok {
			t.Fatalf("no CDN User-Agent documented for %s", p.Name)
		}
		if got := ogplatform.FromUserAgent(ua); got != p {
			t.Fatalf("%q is read as %s, want %s", ua, got.Name, p.Name)
		}
	}
	if len(cdnUserAgents) != len(ogplatform.All) {
		t.Fatalf("%d CDN User-Agents for %d platforms", len(cdnUserAgents), len(ogplatform.All))
	}
	o := newOGOrigin(t, contract.OGAsIs)
	_, base := newOGEdge(t, o.URL, ogClock(), nil)
	path := contract.OGPrefix + ogDomain + "/post"
	first := ogGet(t, base, "GET", path, "Mozilla/5.0 (compatible; Twitterbot/1.0)")
	again := ogGet(t, base, "GET", path, cdnUserAgents["twitter"])
	apitest.WantStatus(t, again, 200)
	if again.Header.Get("ETag") != first.Header.Get("ETag") || o.count.Load() != 1 {
		t.Fatalf("ETags %s and %s, %d requests to the origin: want one entry", first.Header.Get("ETag"), again.Header.Get("ETag"), o.count.Load())
	}
}
