package edge

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"hash/maphash"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/valyala/fasthttp"

	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/contract/ogplatform"
)

// Tests of OG images: the edge against an origin of its own that speaks
// the OG path as the real one does, over loopback, with a real cache on a
// temporary directory and a clock the tests move.

const (
	ogMaxAgeS = 3600  // what the test origin says is left of the refresh interval
	ogSWRS    = 86400 // its stale-while-revalidate
	ogDomain  = "k5hq3mxw7ztd2ga4vbnyc6ru2e"
)

// ogRequest is what the test origin was asked.
type ogRequest struct {
	path, rawPath, query, platform, ifNoneMatch, requestID, forwardedFor string
}

// ogOrigin answers GET /v1/og/{domain}/{path...} as the origin does: 200
// with the image of the current version (ETag "v<version>" in fit mode,
// "v<version>-<platform>" as is), Cache-Control with max-age and
// stale-while-revalidate, X-Pictor-Org and X-Pictor-Tag og:cfg-<domain>;
// 304 to a matching If-None-Match; the error set with fail instead of
// either. It reports every request on arrived, then waits for hold to
// close when one is set.
type ogOrigin struct {
	*httptest.Server
	arrived chan ogRequest
	count   atomic.Int64

	mu         sync.Mutex
	mode       string
	version    int
	fail       int    // answer this status with the standard body instead
	retryAfter string // with fail
	scale      string // X-Pictor-Og-Scale in fit mode, when set
	hold       chan struct{}
	images     map[string][]byte
}

func newOGOrigin(t testing.TB, mode string) *ogOrigin {
	o := &ogOrigin{arrived: make(chan ogRequest, 4096), mode: mode, version: 1, images: map[string][]byte{}}
	o.Server = httptest.NewServer(http.HandlerFunc(o.serve))
	t.Cleanup(func() {
		o.release()
		o.Close()
	})
	return o
}

func (o *ogOrigin) serve(w http.ResponseWriter, r *http.Request) {
	o.count.Add(1)
	req := ogRequest{path: r.URL.Path, rawPath: r.URL.EscapedPath(), query: r.URL.RawQuery,
		platform: r.Header.Get(contract.HeaderOGPlatform), ifNoneMatch: r.Header.Get("If-None-Match"),
		requestID: r.Header.Get(contract.HeaderRequestID), forwardedFor: strings.Join(r.Header.Values(contract.HeaderForwardedFor), "|")}
	select {
	case o.arrived <- req:
	default:
	}
	o.mu.Lock()
	hold, mode, version, fail, retryAfter, scale := o.hold, o.mode, o.version, o.fail, o.retryAfter, o.scale
	o.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	rest, ok := strings.CutPrefix(r.URL.Path, contract.OGPrefix)
	domain, _, _ := strings.Cut(rest, "/")
	if fail == 0 && (!ok || domain == "unknown") {
		fail = http.StatusNotFound
	}
	if fail != 0 {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.Header().Set("Cache-Control", "no-store") // as the origin answers every failure
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(fail)
		fmt.Fprintf(w, `{"error":%q,"message":"test origin failure","statusCode":%d}`, http.StatusText(fail), fail)
		return
	}
	etag := fmt.Sprintf(`"v%d"`, version)
	if mode == contract.OGAsIs {
		etag = fmt.Sprintf(`"v%d-%s"`, version, req.platform)
	}
	w.Header().Set("Cache-Control", fmt.Sprintf("public, max-age=%d, stale-while-revalidate=%d", ogMaxAgeS, ogSWRS))
	w.Header().Set("ETag", etag)
	if req.ifNoneMatch == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Last-Modified", time.Unix(1_760_000_000, 0).UTC().Format(http.TimeFormat))
	w.Header().Set(contract.HeaderOrg, "org-1")
	w.Header().Set(contract.HeaderTag, contract.OGConfigTag("cfg-"+domain))
	w.Header().Set(contract.HeaderOGMode, mode)
	if mode == contract.OGFit && scale != "" {
		w.Header().Set(contract.HeaderOGScale, scale)
	}
	w.Write(o.image(mode, req.platform, version))
}

// image is the origin's image: in fit mode one 1600×900 image for every
// platform, in vertical stripes (a blue quarter, a red half, a green
// quarter); as is, a small image per platform and version.
func (o *ogOrigin) image(mode, platform string, version int) []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	name := fmt.Sprintf("%s/%s/%d", mode, platform, version)
	if b, ok := o.images[name]; ok {
		return b
	}
	var img *image.NRGBA
	if mode == contract.OGFit {
		img = image.NewNRGBA(image.Rect(0, 0, 1600, 900))
		for y := range 900 {
			for x := range 1600 {
				c := ogRed(version)
				switch {
				case x < 400:
					c = ogBlue
				case x >= 1200:
					c = ogGreen
				}
				img.SetNRGBA(x, y, c)
			}
		}
	} else {
		p, _ := ogplatform.ByName(platform)
		img = image.NewNRGBA(image.Rect(0, 0, p.Width/100, p.Height/100))
		for i := range img.Pix {
			img.Pix[i] = byte(version*40 + len(platform))
		}
	}
	var b bytes.Buffer
	png.Encode(&b, img)
	o.images[name] = b.Bytes()
	return b.Bytes()
}

var (
	ogBlue  = color.NRGBA{0, 0, 255, 255}
	ogGreen = color.NRGBA{0, 255, 0, 255}
)

func ogRed(version int) color.NRGBA { return color.NRGBA{255, uint8(version * 20), 0, 255} }

func (o *ogOrigin) set(f func(o *ogOrigin)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	f(o)
}

// holdAnswers makes the next answers wait until release.
func (o *ogOrigin) holdAnswers() { o.set(func(o *ogOrigin) { o.hold = make(chan struct{}) }) }

func (o *ogOrigin) release() {
	o.set(func(o *ogOrigin) {
		if o.hold != nil {
			close(o.hold)
			o.hold = nil
		}
	})
}

// next returns the next request the origin received.
func (o *ogOrigin) next(t testing.TB) ogRequest {
	t.Helper()
	select {
	case r := <-o.arrived:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("the origin received no request")
		return ogRequest{}
	}
}

// newOGEdge starts an edge on loopback whose OG clock is clock.
func newOGEdge(t testing.TB, origin string, clock *apitest.Clock, tune func(*Config)) (*Edge, string) {
	t.Helper()
	e := newTunedEdge(t, origin, func(c *Config) {
		c.Now = clock.Now
		if tune != nil {
			tune(c)
		}
	})
	base := startEdge(t, e)
	// Before Stop: a connection the client dialled and never used would
	// hold up the drain until the header timeout.
	t.Cleanup(apitest.Client.CloseIdleConnections)
	return e, base
}

// counterValue reads a counter.
func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

func ogClock() *apitest.Clock { return apitest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)) }

// ogGet asks base for path with a User-Agent (Go's own when "").
func ogGet(t testing.TB, base, method, path, ua string, header ...string) *apitest.Response {
	t.Helper()
	h := map[string]string{}
	if ua != "" {
		h["User-Agent"] = ua
	}
	for i := 0; i+1 < len(header); i += 2 {
		h[header[i]] = header[i+1]
	}
	r := apitest.Do(t, base, apitest.Request{Method: method, Path: path, Header: h})
	wantVaryUA(t, r)
	return r
}

// wantVaryUA: every OG answer says it depends on the User-Agent (the
// edge keys on the platform it reads there), and no internal note leaks.
func wantVaryUA(t testing.TB, r *apitest.Response) {
	t.Helper()
	if v := r.Header.Values("Vary"); len(v) != 1 || v[0] != "User-Agent" {
		t.Fatalf("Vary: %q, want User-Agent", v)
	}
	for k := range r.Header {
		if strings.HasPrefix(k, contract.InternalPrefix) {
			t.Fatalf("the origin's note %s reached the client", k)
		}
	}
}

func wantHeader(t testing.TB, r *apitest.Response, name, want string) {
	t.Helper()
	if got := r.Header.Get(name); got != want {
		t.Fatalf("%s = %q, want %q", name, got, want)
	}
}

func ogCC(maxAge int) string {
	return fmt.Sprintf("public, max-age=%d, stale-while-revalidate=%d", maxAge, ogSWRS)
}

const (
	uaTwitter   = "Twitterbot/1.0"
	uaPinterest = "Pinterest/0.2 (+https://www.pinterest.com/bot.html)"
)

// TestOGFreshHit: a filled entry is answered from the cache while fresh,
// with what is left of its freshness, 304 to its ETag, headers only to
// HEAD; the origin was asked once, at the normalised path without the
// query, with the platform.
func TestOGFreshHit(t *testing.T) {
	o := newOGOrigin(t, contract.OGAsIs)
	clock := ogClock()
	e, base := newOGEdge(t, o.URL, clock, nil)
	path := contract.OGPrefix + ogDomain + "/blog/post"
	first := ogGet(t, base, "GET", path+"?utm_source=x", "")
	apitest.WantStatus(t, first, 200)
	want := o.image(contract.OGAsIs, "default", 1)
	if !bytes.Equal(first.Body, want) {
		t.Fatal("the first answer is not the origin's image")
	}
	wantHeader(t, first, "Cache-Control", ogCC(ogMaxAgeS))
	req := o.next(t)
	if req.path != path || req.query != "" || req.platform != "default" || req.ifNoneMatch != "" || req.requestID == "" {
		t.Fatalf("the origin was asked %+v", req)
	}

	clock.Advance(100 * time.Second)
	etag := `"v1-default"`
	for _, tc := range []struct {
		name   string
		method string
		header []string
		status int
		body   bool
	}{
		{"get", "GET", nil, 200, true},
		{"query ignored", "GET", nil, 200, true},
		{"if-none-match", "GET", []string{"If-None-Match", etag}, 304, false},
		{"if-none-match in a list", "GET", []string{"If-None-Match", `"other", ` + etag}, 304, false},
		{"if-none-match of another image", "GET", []string{"If-None-Match", `"v0-default"`}, 200, true},
		{"head", "HEAD", nil, 200, false},
		{"conditional head", "HEAD", []string{"If-None-Match", etag}, 304, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := path
			if tc.name == "query ignored" {
				p += "?v=2"
			}
			r := ogGet(t, base, tc.method, p, "", tc.header...)
			apitest.WantStatus(t, r, tc.status)
			wantHeader(t, r, "ETag", etag)
			wantHeader(t, r, "Cache-Control", ogCC(ogMaxAgeS-100))
			wantHeader(t, r, "Last-Modified", time.Unix(1_760_000_000, 0).UTC().Format(http.TimeFormat))
			if tc.body != bytes.Equal(r.Body, want) || (!tc.body && len(r.Body) != 0) {
				t.Fatalf("body of %d bytes, want the image: %v", len(r.Body), tc.body)
			}
			if tc.status == 200 {
				wantHeader(t, r, "Content-Type", "image/png")
			}
		})
	}
	if n := o.count.Load(); n != 1 {
		t.Fatalf("the origin was asked %d times, want 1", n)
	}
	if m := metric(t, e, `pictor_edge_og_hits_total{state="fresh"}`); m != "7" {
		t.Fatalf("fresh hits counted %q, want 7", m)
	}
	if m := metric(t, e, `pictor_edge_og_misses_total`); m != "1" {
		t.Fatalf("misses counted %q, want 1", m)
	}
}

// TestOGStaleRevalidatedOnce: past its freshness an entry is served at
// once, stale (max-age=0), to 50 concurrent requests while one request to
// the origin revalidates it, with the origin's ETag; a 304 makes it fresh
// again, a 200 replaces it (fitted again in fit mode).
func TestOGStaleRevalidatedOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mode    string
		changed bool
	}{
		{"as is, not modified", contract.OGAsIs, false},
		{"as is, modified", contract.OGAsIs, true},
		{"fit, not modified", contract.OGFit, false},
		{"fit, modified", contract.OGFit, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newOGOrigin(t, tc.mode)
			clock := ogClock()
			e, base := newOGEdge(t, o.URL, clock, nil)
			path := contract.OGPrefix + ogDomain + "/pricing"
			first := ogGet(t, base, "GET", path, uaTwitter)
			apitest.WantStatus(t, first, 200)
			o.next(t)
			validator := `"v1-twitter"`
			if tc.mode == contract.OGFit {
				validator = `"v1"` // the origin's, not the fitted image's
				apitest.WantSize(t, apitest.DecodeImage(t, first), 1200, 600)
			}

			clock.Advance((ogMaxAgeS + 1) * time.Second)
			if tc.changed {
				o.set(func(o *ogOrigin) { o.version = 2 })
			}
			o.holdAnswers()
			const n = 50
			answers := make(chan *apitest.Response, n)
			errs := make(chan error, n)
			for range n {
				go func() {
					r, err := apitest.Send(base, apitest.Request{Method: "GET", Path: path, Header: map[string]string{"User-Agent": uaTwitter}})
					if err != nil {
						errs <- err
						return
					}
					answers <- r
				}()
			}
			for range n {
				select {
				case r := <-answers:
					apitest.WantStatus(t, r, 200)
					wantVaryUA(t, r)
					if !bytes.Equal(r.Body, first.Body) {
						t.Fatal("a stale hit is not the cached image")
					}
					wantHeader(t, r, "ETag", first.Header.Get("ETag"))
					wantHeader(t, r, "Cache-Control", ogCC(0))
				case err := <-errs:
					t.Fatal(err)
				case <-time.After(30 * time.Second):
					t.Fatal("stale hits waited for the revalidation")
				}
			}
			req := o.next(t)
			if req.ifNoneMatch != validator || req.platform != "twitter" || req.path != path {
				t.Fatalf("the revalidation asked %+v, want If-None-Match %s", req, validator)
			}
			o.release()
			outcome := ogNotModified
			if tc.changed {
				outcome = ogModified
			}
			waitFor(t, 30*time.Second, "the revalidation", func() bool {
				return counterValue(e.og.revalidations.WithLabelValues(outcome)) >= 1 && e.og.busy() == 0
			})
			if got := counterValue(e.og.revalidations.WithLabelValues(outcome)); got != 1 {
				t.Fatalf("%v revalidations, want 1", got)
			}
			if got := o.count.Load(); got != 2 {
				t.Fatalf("the origin was asked %d times, want a fill and one revalidation", got)
			}
			if m := metric(t, e, `pictor_edge_og_hits_total{state="stale"}`); m != "50" {
				t.Fatalf("stale hits counted %q, want 50", m)
			}

			r := ogGet(t, base, "GET", path, uaTwitter)
			apitest.WantStatus(t, r, 200)
			wantHeader(t, r, "Cache-Control", ogCC(ogMaxAgeS))
			if same := bytes.Equal(r.Body, first.Body); same == tc.changed {
				t.Fatalf("after the revalidation the image is the old one: %v, want %v", same, !tc.changed)
			}
			if same := r.Header.Get("ETag") == first.Header.Get("ETag"); same == tc.changed {
				t.Fatalf("after the revalidation the ETag is %s (first %s)", r.Header.Get("ETag"), first.Header.Get("ETag"))
			}
			if tc.mode == contract.OGFit {
				img := apitest.DecodeImage(t, r)
				apitest.WantSize(t, img, 1200, 600)
				version := 1
				if tc.changed {
					version = 2
				}
				apitest.WantPixel(t, img, 600, 300, ogRed(version), 8)
			}
			if got := o.count.Load(); got != 2 {
				t.Fatalf("the origin was asked %d times, want 2", got)
			}
		})
	}
}

// TestOGRevalidationFailures: while the origin fails, the stale entry is
// served and the key backs off (10 s, then 20 s) instead of asking again
// on every request, each failure logged once; once the origin answers,
// the entry is fresh again. An origin that is down altogether: stale
// entries are still served, and a miss fails at once with 502.
func TestOGRevalidationFailures(t *testing.T) {
	t.Run("origin failing", func(t *testing.T) {
		logs := apitest.CaptureLogs(t)
		o := newOGOrigin(t, contract.OGAsIs)
		clock := ogClock()
		e, base := newOGEdge(t, o.URL, clock, nil)
		path := contract.OGPrefix + ogDomain + "/"
		apitest.WantStatus(t, ogGet(t, base, "GET", path, ""), 200)
		o.next(t)
		clock.Advance((ogMaxAgeS + 1) * time.Second)
		o.set(func(o *ogOrigin) { o.fail, o.retryAfter = http.StatusServiceUnavailable, "30" })

		failures := 0
		attempt := func() {
			t.Helper()
			r := ogGet(t, base, "GET", path, "")
			apitest.WantStatus(t, r, 200)
			wantHeader(t, r, "Cache-Control", ogCC(0))
			if req := o.next(t); req.ifNoneMatch != `"v1-default"` {
				t.Fatalf("revalidation %+v", req)
			}
			failures++
			waitFor(t, 30*time.Second, "the failure", func() bool {
				return counterValue(e.og.revalidations.WithLabelValues(ogFailed)) == float64(failures) && e.og.busy() == 0
			})
		}
		skipped := func(want int) {
			t.Helper()
			for range 3 {
				r := ogGet(t, base, "GET", path, "")
				apitest.WantStatus(t, r, 200)
			}
			if got := counterValue(e.og.skippedBackoff); got != float64(want) {
				t.Fatalf("%v stale hits skipped their revalidation for the back-off, want %d", got, want)
			}
		}
		attempt()
		skipped(3)
		clock.Advance(10 * time.Second)
		attempt()
		clock.Advance(10 * time.Second) // the back-off doubled to 20 s
		skipped(6)
		clock.Advance(10 * time.Second)
		attempt()
		if got := strings.Count(logs.String(), "edge OG revalidation failed"); got != failures {
			t.Fatalf("%d failures logged, want %d:\n%s", got, failures, logs)
		}
		if got := o.count.Load(); got != int64(1+failures) {
			t.Fatalf("the origin was asked %d times, want %d", got, 1+failures)
		}

		o.set(func(o *ogOrigin) { o.fail = 0 })
		clock.Advance(40 * time.Second)
		apitest.WantStatus(t, ogGet(t, base, "GET", path, ""), 200)
		o.next(t)
		waitFor(t, 30*time.Second, "the revalidation", func() bool {
			return counterValue(e.og.revalidations.WithLabelValues(ogNotModified)) == 1 && e.og.busy() == 0
		})
		wantHeader(t, ogGet(t, base, "GET", path, ""), "Cache-Control", ogCC(ogMaxAgeS))
		e.og.mu.Lock()
		left := len(e.og.backoff)
		e.og.mu.Unlock()
		if left != 0 {
			t.Fatalf("%d back-offs outlived the recovery", left)
		}
	})

	t.Run("origin down", func(t *testing.T) {
		o := newOGOrigin(t, contract.OGAsIs)
		clock := ogClock()
		e, base := newOGEdge(t, o.URL, clock, nil)
		cached := contract.OGPrefix + ogDomain + "/cached"
		apitest.WantStatus(t, ogGet(t, base, "GET", cached, ""), 200)
		o.Close() // connections are refused from now on
		clock.Advance((ogMaxAgeS + 1) * time.Second)

		r := ogGet(t, base, "GET", cached, "")
		apitest.WantStatus(t, r, 200)
		wantHeader(t, r, "Cache-Control", ogCC(0))
		waitFor(t, 30*time.Second, "the failed revalidation", func() bool {
			return counterValue(e.og.revalidations.WithLabelValues(ogFailed)) == 1 && e.og.busy() == 0
		})
		apitest.WantStatus(t, ogGet(t, base, "GET", cached, ""), 200)

		// A miss: 502 at once (the client gives up after 10 s).
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}
		resp, err := client.Get(base + contract.OGPrefix + ogDomain + "/not-cached")
		if err != nil {
			t.Fatalf("a miss with the origin down: %v", err)
		}
		defer resp.Body.Close()
		var body bytes.Buffer
		body.ReadFrom(resp.Body)
		apitest.WantError(t, &apitest.Response{Status: resp.StatusCode, Header: resp.Header, Body: body.Bytes()}, http.StatusBadGateway)
	})
}

// TestOGOriginNotAccepting: an origin whose connections time out (its
// accept queue is full, so the kernel drops the edge's SYN) fails an OG
// miss with 502, as the image path and the relay answer an origin they
// cannot reach; 504 is for an origin that took the request and did not
// answer in time.
func TestOGOriginNotAccepting(t *testing.T) {
	t.Parallel() // it waits for the dial timeout
	_, base := newOGEdge(t, "http://"+apitest.UnansweredAddr(t), ogClock(), nil)
	r := ogGet(t, base, "GET", contract.OGPrefix+ogDomain+"/never", "")
	apitest.WantMessage(t, apitest.WantError(t, r, http.StatusBadGateway), "The origin is unavailable")
}

// TestOGRevalidationGone: a page the origin no longer has (404 on
// revalidation) is dropped; the next request relays the origin's 404.
func TestOGRevalidationGone(t *testing.T) {
	o := newOGOrigin(t, contract.OGAsIs)
	clock := ogClock()
	e, base := newOGEdge(t, o.URL, clock, nil)
	path := contract.OGPrefix + ogDomain + "/removed"
	apitest.WantStatus(t, ogGet(t, base, "GET", path, ""), 200)
	clock.Advance((ogMaxAgeS + 1) * time.Second)
	o.set(func(o *ogOrigin) { o.fail = http.StatusNotFound })
	apitest.WantStatus(t, ogGet(t, base, "GET", path, ""), 200)
	waitFor(t, 30*time.Second, "the revalidation", func() bool {
		return counterValue(e.og.revalidations.WithLabelValues(ogGone)) == 1 && e.og.busy() == 0
	})
	apitest.WantError(t, ogGet(t, base, "GET", path, ""), http.StatusNotFound)
}

// TestOGRevalidationsBounded: however many entries go stale at once, at
// most ogRevalidations revalidate at a time; the others are served and
// revalidated by a later hit.
func TestOGRevalidationsBounded(t *testing.T) {
	o := newOGOrigin(t, contract.OGAsIs)
	clock := ogClock()
	e, base := newOGEdge(t, o.URL, clock, nil)
	const keys = ogRevalidations + 4
	for i := range keys {
		apitest.WantStatus(t, ogGet(t, base, "GET", fmt.Sprintf("%s%s/p%d", contract.OGPrefix, ogDomain, i), ""), 200)
		o.next(t)
	}
	clock.Advance((ogMaxAgeS + 1) * time.Second)
	o.holdAnswers()
	for i := range keys {
		apitest.WantStatus(t, ogGet(t, base, "GET", fmt.Sprintf("%s%s/p%d", contract.OGPrefix, ogDomain, i), ""), 200)
	}
	for range ogRevalidations {
		o.next(t)
	}
	if got := counterValue(e.og.skippedBusy); got != keys-ogRevalidations {
		t.Fatalf("%v stale hits found every slot busy, want %d", got, keys-ogRevalidations)
	}
	o.release()
	waitFor(t, 30*time.Second, "the revalidations", func() bool {
		return counterValue(e.og.revalidations.WithLabelValues(ogNotModified)) == ogRevalidations && e.og.busy() == 0
	})
	if got := o.count.Load(); got != keys+ogRevalidations {
		t.Fatalf("the origin was asked %d times, want %d", got, keys+ogRevalidations)
	}
}

// TestOGStopEndsRevalidations: Stop cancels a revalidation the origin
// holds and returns once it has ended: no goroutine is left.
func TestOGStopEndsRevalidations(t *testing.T) {
	canceled := make(chan struct{}, 1)
	var mu sync.Mutex
	stale := false
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hang := stale
		mu.Unlock()
		if hang {
			<-r.Context().Done()
			canceled <- struct{}{}
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=60")
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Content-Type", "image/png")
		w.Header().Set(contract.HeaderOrg, "org-1")
		w.Header().Set(contract.HeaderTag, "og:cfg")
		w.Write([]byte("png"))
	}))
	defer origin.Close()
	clock := ogClock()
	e, base := newOGEdge(t, origin.URL, clock, nil)
	path := contract.OGPrefix + ogDomain + "/"
	apitest.WantStatus(t, ogGet(t, base, "GET", path, ""), 200)
	mu.Lock()
	stale = true
	mu.Unlock()
	clock.Advance(time.Hour)
	apitest.WantStatus(t, ogGet(t, base, "GET", path, ""), 200)
	waitFor(t, 30*time.Second, "the revalidation", func() bool { return e.og.busy() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	select {
	case <-canceled:
	case <-time.After(30 * time.Second):
		t.Fatal("Stop left the revalidation's request to the origin")
	}
	if n := e.og.busy(); n != 0 {
		t.Fatalf("%d revalidations running after Stop", n)
	}
	// A stale hit after Stop starts nothing.
	e.revalidateOG([]byte("o|"+ogDomain+"|default|/"), len(ogDomain), ogplatform.Default, []byte("rid"), clock.Now())
	if e.og.busy() != 0 {
		t.Fatal("a revalidation started after Stop")
	}
}

// TestOGPlatforms: each crawler gets its own entry and, in fit mode, the
// one image fitted to its size: covered and cropped around the centre,
// never stretched, never letterboxed.
func TestOGPlatforms(t *testing.T) {
	o := newOGOrigin(t, contract.OGFit)
	_, base := newOGEdge(t, o.URL, ogClock(), nil)
	path := contract.OGPrefix + ogDomain + "/launch"
	red := ogRed(1)
	tests := []struct {
		name     string
		ua       string
		platform string
		w, h     int
		// colours at the left and right edges, halfway down: a 1600×900
		// image of blue | red red | green covers the box
		left, right color.NRGBA
	}{
		{"browser", "Mozilla/5.0 (X11; Linux x86_64) Chrome/126.0", "default", 1200, 630, ogBlue, ogGreen},
		{"facebook", "facebookexternalhit/1.1", "facebook", 1200, 630, ogBlue, ogGreen},
		{"twitter", uaTwitter, "twitter", 1200, 600, ogBlue, ogGreen},
		{"linkedin", "LinkedInBot/1.0 (compatible; Mozilla/5.0)", "linkedin", 1200, 627, ogBlue, ogGreen},
		{"apple", "Mozilla/5.0 Safari/601.2.4 facebookexternalhit/1.1 Facebot Twitterbot/1.0", "apple", 1200, 628, ogBlue, ogGreen},
		{"mastodon", "http.rb/5.1.1 (Mastodon/4.2.0; +https://mastodon.social/)", "mastodon", 1200, 675, ogBlue, ogGreen},
		// 1080×1080 takes source columns 350 to 1250: a sliver of each side.
		{"instagram", "Mozilla/5.0 (iPhone) Mobile/15E148 Instagram 300.0.0.0", "instagram", 1080, 1080, ogBlue, ogGreen},
		// 1000×1500 takes source columns 500 to 1100: all red.
		{"pinterest", uaPinterest, "pinterest", 1000, 1500, red, red},
	}
	for round := range 2 {
		for _, tc := range tests {
			t.Run(fmt.Sprintf("%s/%d", tc.name, round), func(t *testing.T) {
				r := ogGet(t, base, "GET", path, tc.ua)
				apitest.WantStatus(t, r, 200)
				img := apitest.DecodeImage(t, r)
				apitest.WantSize(t, img, tc.w, tc.h)
				apitest.WantPixel(t, img, tc.w/2, tc.h/2, red, 8)
				apitest.WantPixel(t, img, 1, tc.h/2, tc.left, 8)
				apitest.WantPixel(t, img, tc.w-2, tc.h/2, tc.right, 8)
				apitest.WantPixel(t, img, tc.w/2, 1, red, 8) // no bar at the top
				apitest.WantPixel(t, img, tc.w/2, tc.h-2, red, 8)
				wantHeader(t, r, "ETag", fittedETag(`"v1"`, tc.platform))
				if round == 0 {
					if req := o.next(t); req.platform != tc.platform {
						t.Fatalf("the origin was asked for platform %q, want %q", req.platform, tc.platform)
					}
				}
			})
		}
	}
	if got := o.count.Load(); got != int64(len(tests)) {
		t.Fatalf("the origin was asked %d times, want once per platform (%d)", got, len(tests))
	}
}

// TestOGFitScale: an image rendered at a device scale is fitted to the
// platform's size times that scale; a scale that cannot be is ignored.
func TestOGFitScale(t *testing.T) {
	for _, tc := range []struct {
		name  string
		scale string
		ua    string
		w, h  int
	}{
		{"none", "", uaTwitter, 1200, 600},
		{"double", "2", uaTwitter, 2400, 1200},
		{"one and a half", "1.5", uaPinterest, 1500, 2250},
		{"half", "0.5", "", 600, 315},
		{"past the size limit", "4", uaPinterest, 1000, 1500},
		{"zero", "0", uaTwitter, 1200, 600},
		{"not a number", "high", uaTwitter, 1200, 600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newOGOrigin(t, contract.OGFit)
			o.set(func(o *ogOrigin) { o.scale = tc.scale })
			_, base := newOGEdge(t, o.URL, ogClock(), nil)
			r := ogGet(t, base, "GET", contract.OGPrefix+ogDomain+"/", tc.ua)
			apitest.WantStatus(t, r, 200)
			img := apitest.DecodeImage(t, r)
			apitest.WantSize(t, img, tc.w, tc.h)
			apitest.WantPixel(t, img, tc.w/2, tc.h/2, ogRed(1), 8)
		})
	}
}

// TestOGPlatformsAsIs: as is, each platform's entry is the origin's image
// for it.
func TestOGPlatformsAsIs(t *testing.T) {
	o := newOGOrigin(t, contract.OGAsIs)
	_, base := newOGEdge(t, o.URL, ogClock(), nil)
	path := contract.OGPrefix + ogDomain + "/launch"
	for round := range 2 {
		for _, tc := range []struct{ name, ua, platform string }{
			{"default", "", "default"},
			{"twitter", uaTwitter, "twitter"},
			{"pinterest", uaPinterest, "pinterest"},
		} {
			t.Run(fmt.Sprintf("%s/%d", tc.name, round), func(t *testing.T) {
				r := ogGet(t, base, "GET", path, tc.ua)
				if !bytes.Equal(r.Body, o.image(contract.OGAsIs, tc.platform, 1)) {
					t.Fatalf("not the origin's image for %s", tc.platform)
				}
				wantHeader(t, r, "ETag", `"v1-`+tc.platform+`"`)
			})
		}
	}
	if got := o.count.Load(); got != 3 {
		t.Fatalf("the origin was asked %d times, want 3", got)
	}
}

// TestOGPathSpellings: every spelling of a page path shares one entry,
// filled by one request for the normalised path.
func TestOGPathSpellings(t *testing.T) {
	o := newOGOrigin(t, contract.OGAsIs)
	_, base := newOGEdge(t, o.URL, ogClock(), nil)
	var body []byte
	for _, tc := range []struct{ name, path string }{
		{"normal", "/a/b"},
		{"double slash and trailing slash", "/a//b/"},
		{"escaped letter", "/a/%62"},
		{"lower-case escape of a letter", "/%61/b"},
		{"dot segment", "/a/./b"},
		{"dot-dot segment", "/a/c/../b"},
		{"query", "/a/b?utm_source=x&ref=y"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ogGet(t, base, "GET", contract.OGPrefix+ogDomain+tc.path, "")
			apitest.WantStatus(t, r, 200)
			if body == nil {
				body = r.Body
			} else if !bytes.Equal(r.Body, body) {
				t.Fatal("another image")
			}
		})
	}
	t.Run("prefix spelled with a double slash", func(t *testing.T) {
		apitest.WantStatus(t, ogGet(t, base, "GET", "/v1//og/"+ogDomain+"/a/b", ""), 200)
	})
	if got := o.count.Load(); got != 1 {
		t.Fatalf("the origin was asked %d times, want 1", got)
	}
	if req := o.next(t); req.rawPath != contract.OGPrefix+ogDomain+"/a/b" {
		t.Fatalf("the origin was asked for %q", req.rawPath)
	}
	// Escapes the path needs stay, in one spelling.
	apitest.WantStatus(t, ogGet(t, base, "GET", contract.OGPrefix+ogDomain+"/caf%c3%a9%20menu", ""), 200)
	apitest.WantStatus(t, ogGet(t, base, "GET", contract.OGPrefix+ogDomain+"/caf%C3%A9%20menu/", ""), 200)
	if req := o.next(t); req.rawPath != contract.OGPrefix+ogDomain+"/caf%C3%A9%20menu" {
		t.Fatalf("the origin was asked for %q", req.rawPath)
	}
	if got := o.count.Load(); got != 2 {
		t.Fatalf("the origin was asked %d times, want 2", got)
	}
}

// TestOGBadRequests: a malformed page path is a 400 naming the path, an
// id that cannot be a domain id a 404; neither reaches the origin.
func TestOGBadRequests(t *testing.T) {
	o := newOGOrigin(t, contract.OGAsIs)
	_, base := newOGEdge(t, o.URL, ogClock(), nil)
	for _, tc := range []struct {
		name   string
		path   string
		status int
	}{
		{"bad escape", ogDomain + "/a/%zz", 400},
		{"truncated escape", ogDomain + "/a%4", 400},
		{"escaped control character", ogDomain + "/a%00b", 400},
		{"path over 2 KiB", ogDomain + "/" + strings.Repeat("a", 2100), 400},
		{"domain id with a dot", "example.com/a", 404},
		{"escaped domain id", "%6b5hq/a", 404},
		{"domain id too long", strings.Repeat("a", 65) + "/a", 404},
		{"no domain id", "/a", 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Sent as they are: Go's client refuses a malformed escape.
			c := dial(t, strings.TrimPrefix(base, "http://"))
			fmt.Fprintf(c, "GET %s%s HTTP/1.1\r\nHost: edge\r\nConnection: close\r\n\r\n", contract.OGPrefix, tc.path)
			r := readResponse(t, bufio.NewReader(c)).Response
			wantVaryUA(t, r)
			if tc.status == 400 {
				apitest.WantField(t, r, "path")
			} else {
				apitest.WantError(t, r, tc.status)
			}
		})
	}
	if got := o.count.Load(); got != 0 {
		t.Fatalf("the origin was asked %d times", got)
	}
}

// TestOGBurst: 50 concurrent first requests for one image make one
// request to the origin.
func TestOGBurst(t *testing.T) {
	o := newOGOrigin(t, contract.OGFit)
	e, base := newOGEdge(t, o.URL, ogClock(), nil)
	path := contract.OGPrefix + ogDomain + "/hot"
	o.holdAnswers()
	const n = 50
	answers := make(chan *apitest.Response, n)
	errs := make(chan error, n)
	for range n {
		go func() {
			r, err := apitest.Send(base, apitest.Request{Method: "GET", Path: path, Header: map[string]string{"User-Agent": uaTwitter}})
			if err != nil {
				errs <- err
				return
			}
			answers <- r
		}()
	}
	waitFor(t, 30*time.Second, "50 misses", func() bool { return counterValue(e.og.misses) == n })
	o.release()
	var body []byte
	for range n {
		select {
		case r := <-answers:
			apitest.WantStatus(t, r, 200)
			if body == nil {
				body = r.Body
				apitest.WantSize(t, apitest.DecodeImage(t, r), 1200, 600)
			} else if !bytes.Equal(body, r.Body) {
				t.Fatal("the answers differ")
			}
		case err := <-errs:
			t.Fatal(err)
		case <-time.After(60 * time.Second):
			t.Fatal("the burst was not answered")
		}
	}
	if got := o.count.Load(); got != 1 {
		t.Fatalf("the origin was asked %d times, want 1", got)
	}
}

// TestOGPurge: PurgeTag of a configuration's tag drops its images for every
// platform and path, and only those; PurgeOrg drops every one.
func TestOGPurge(t *testing.T) {
	o := newOGOrigin(t, contract.OGAsIs)
	e, base := newOGEdge(t, o.URL, ogClock(), nil)
	const other = "othr5hq3mxw7ztd2ga4vbnyc6u"
	type page struct{ domain, path, ua string }
	var mine []page
	for _, p := range []string{"/a", "/b"} {
		for _, ua := range []string{"", uaTwitter, uaPinterest} {
			mine = append(mine, page{ogDomain, p, ua})
		}
	}
	theirs := page{other, "/a", ""}
	fetch := func(p page) {
		t.Helper()
		apitest.WantStatus(t, ogGet(t, base, "GET", contract.OGPrefix+p.domain+p.path, p.ua), 200)
	}
	for _, p := range append(mine, theirs) {
		fetch(p)
	}
	asked := o.count.Load()
	if n, err := e.PurgeTag(contract.OGConfigTag("cfg-" + ogDomain)); err != nil || n != len(mine) {
		t.Fatalf("PurgeTag = %d, %v; want %d", n, err, len(mine))
	}
	fetch(theirs)
	if got := o.count.Load(); got != asked {
		t.Fatal("the purge of one configuration dropped another's image")
	}
	for _, p := range mine {
		fetch(p)
	}
	if got := o.count.Load(); got != asked+int64(len(mine)) {
		t.Fatalf("after the purge the origin was asked %d times, want %d", got-asked, len(mine))
	}
	if n, err := e.PurgeOrg("org-1"); err != nil || n != len(mine)+1 {
		t.Fatalf("PurgeOrg = %d, %v; want %d", n, err, len(mine)+1)
	}
}

// TestOGErrorsRelayed: the origin's errors reach the client as they are
// (status, standard body, Retry-After) and are never cached.
func TestOGErrorsRelayed(t *testing.T) {
	for _, tc := range []struct {
		name       string
		status     int
		retryAfter string
	}{
		{"not found", http.StatusNotFound, ""},
		{"bad request", http.StatusBadRequest, ""},
		{"bad gateway", http.StatusBadGateway, ""},
		{"render budget spent", http.StatusServiceUnavailable, "17"},
		{"new images limited", http.StatusTooManyRequests, "86400"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newOGOrigin(t, contract.OGAsIs)
			o.set(func(o *ogOrigin) { o.fail, o.retryAfter = tc.status, tc.retryAfter })
			_, base := newOGEdge(t, o.URL, ogClock(), nil)
			for i := range 2 {
				r := ogGet(t, base, "GET", contract.OGPrefix+ogDomain+"/x", "")
				m := apitest.WantError(t, r, tc.status)
				apitest.WantMessage(t, m, "test origin failure")
				wantHeader(t, r, "Retry-After", tc.retryAfter)
				wantHeader(t, r, "Cache-Control", "no-store")
				if got := o.count.Load(); got != int64(i+1) {
					t.Fatalf("request %d: the origin was asked %d times: the error was cached", i, got)
				}
			}
		})
	}
}

// TestOGForwardsClientAddress: a fill tells the origin the address of the
// client whose miss started it (X-Forwarded-For, the edge's own word
// only: what the client claims is not passed on), which the origin limits
// new pages by; a background revalidation has no client and sends none.
func TestOGForwardsClientAddress(t *testing.T) {
	o := newOGOrigin(t, contract.OGAsIs)
	clock := ogClock()
	_, base := newOGEdge(t, o.URL, clock, nil)
	for _, from := range []string{"127.0.0.7", "127.0.0.8"} {
		c := dialFrom(t, strings.TrimPrefix(base, "http://"), from)
		fmt.Fprintf(c, "GET %s%s/from-%s HTTP/1.1\r\nHost: edge\r\nUser-Agent: %s\r\nX-Forwarded-For: 203.0.113.1\r\n\r\n",
			contract.OGPrefix, ogDomain, from, uaTwitter)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("from %s: %d", from, resp.StatusCode)
		}
		if got := o.next(t); got.forwardedFor != from || got.ifNoneMatch != "" {
			t.Fatalf("the fill for %s sent X-Forwarded-For %q", from, got.forwardedFor)
		}
	}
	clock.Advance((ogMaxAgeS + 1) * time.Second)
	apitest.WantStatus(t, ogGet(t, base, "GET", contract.OGPrefix+ogDomain+"/from-127.0.0.7", uaTwitter), 200)
	if got := o.next(t); got.ifNoneMatch == "" || got.forwardedFor != "" {
		t.Fatalf("the revalidation sent If-None-Match %q, X-Forwarded-For %q; want a validator and no address", got.ifNoneMatch, got.forwardedFor)
	}
}

// TestOGClientBehindTrustedProxy: behind a load balancer named in
// TrustedProxies, the fill names the client the balancer saw, not the
// balancer; a forged entry before it and an untrusted peer's header count
// for nothing.
func TestOGClientBehindTrustedProxy(t *testing.T) {
	o := newOGOrigin(t, contract.OGAsIs)
	_, base := newOGEdge(t, o.URL, ogClock(), func(c *Config) {
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.9/32")}
	})
	for i, tt := range []struct{ from, xff, want string }{
		{"127.0.0.9", "1.1.1.1, 203.0.113.5", "203.0.113.5"},     // the balancer
		{"127.0.0.10", "203.0.113.5", "127.0.0.10"},              // not trusted: the peer
		{"127.0.0.9", "198.51.100.1, 127.0.0.9", "198.51.100.1"}, // the balancer behind itself
	} {
		c := dialFrom(t, strings.TrimPrefix(base, "http://"), tt.from)
		fmt.Fprintf(c, "GET %s%s/trusted-%d HTTP/1.1\r\nHost: edge\r\nUser-Agent: %s\r\nX-Forwarded-For: %s\r\n\r\n",
			contract.OGPrefix, ogDomain, i, uaTwitter, tt.xff)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("case %d: %d", i, resp.StatusCode)
		}
		if got := o.next(t); got.forwardedFor != tt.want {
			t.Fatalf("case %d: the fill sent X-Forwarded-For %q, want %q", i, got.forwardedFor, tt.want)
		}
	}
}

// TestOGWithoutPurgeChannel: an edge that cannot hear purges caches
// nothing: every request reaches the origin, and fit mode is still fitted.
func TestOGWithoutPurgeChannel(t *testing.T) {
	o := newOGOrigin(t, contract.OGFit)
	_, base := newOGEdge(t, o.URL, ogClock(), func(c *Config) { c.Standalone = true })
	path := contract.OGPrefix + ogDomain + "/"
	for i, ua := range []string{uaTwitter, uaTwitter, uaPinterest} {
		r := ogGet(t, base, "GET", path, ua)
		apitest.WantStatus(t, r, 200)
		p := ogplatform.FromUserAgent(ua)
		apitest.WantSize(t, apitest.DecodeImage(t, r), p.Width, p.Height)
		wantHeader(t, r, "Cache-Control", ogCC(ogMaxAgeS))
		if got := o.count.Load(); got != int64(i+1) {
			t.Fatalf("request %d: the origin was asked %d times", i, got)
		}
	}
}

func TestParseFreshness(t *testing.T) {
	for _, tc := range []struct {
		name string
		cc   string
		want freshness
	}{
		{"origin's", "public, max-age=10, stale-while-revalidate=86400", freshness{maxAge: 10 * time.Second, swr: 24 * time.Hour}},
		{"none", "", freshness{}},
		{"s-maxage wins", "max-age=10, s-maxage=60", freshness{maxAge: time.Minute}},
		{"no-cache", "max-age=10, no-cache", freshness{}},
		{"no-store", "no-store", freshness{noStore: true}},
		{"private", "private, max-age=60", freshness{maxAge: time.Minute, noStore: true}},
		{"capped", "max-age=99999999999999, stale-while-revalidate=99999999999", freshness{maxAge: ogMaxAge, swr: ogMaxAge}},
		{"malformed", "max-age=ten, stale-while-revalidate=-4", freshness{}},
		{"quoted and spaced", ` Max-Age="30" ,STALE-WHILE-REVALIDATE=5`, freshness{maxAge: 30 * time.Second, swr: 5 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseFreshness(tc.cc); got != tc.want {
				t.Fatalf("parseFreshness(%q) = %+v, want %+v", tc.cc, got, tc.want)
			}
		})
	}
}

// BenchmarkOGHitL1 is an OG image answered from memory, a crawler's
// User-Agent read: like BenchmarkHitL1, it must not allocate.
func BenchmarkOGHitL1(b *testing.B) { benchmarkOGHit(b, uaTwitter) }

// BenchmarkOGHitL1Discord is the same for a crawler whose User-Agent is
// a browser's with a marker, matched by the last rules.
func BenchmarkOGHitL1Discord(b *testing.B) { benchmarkOGHit(b, ogplatform.Discord.UserAgent) }

func benchmarkOGHit(b *testing.B, ua string) {
	o := newOGOrigin(b, contract.OGAsIs)
	e := newTestEdge(b, o.URL)
	uri := contract.OGPrefix + ogDomain + "/blog/post"
	get(e, uri, "User-Agent", ua)
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI(uri)
	ctx.Request.Header.SetUserAgent(ua)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ctx.Response.Reset()
		e.handle(&ctx)
	}
	if ctx.Response.StatusCode() != 200 || len(ctx.Response.Body()) == 0 {
		b.Fatalf("status %d", ctx.Response.StatusCode())
	}
}

// TestOGBackoffBounded: the keys backing off are at most ogBackoffKeys;
// past that, those long past their back-off are forgotten first, and a new
// failing key is not remembered while every one is current.
func TestOGBackoffBounded(t *testing.T) {
	for _, tc := range []struct {
		name       string
		age        time.Duration // how long ago the remembered back-offs ended
		remembered bool          // whether the new key is
	}{
		{"old ones forgotten", 2 * ogBackoffMax, true},
		{"all current", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := ogClock()
			e := newTunedEdge(t, "http://127.0.0.1:9", func(c *Config) { c.Now = clock.Now })
			logs := apitest.CaptureLogs(t)
			for i := range ogBackoffKeys {
				e.og.backoff[fmt.Sprintf("o|d|default|/%d", i)] = ogBackoff{until: clock.Now().Add(-tc.age), delay: ogBackoffMin}
			}
			e.revalidated("o|d|default|/new", ogFailed, fmt.Errorf("origin down"))
			b, ok := e.og.backoff["o|d|default|/new"]
			if ok != tc.remembered || len(e.og.backoff) > ogBackoffKeys {
				t.Fatalf("new key remembered: %v, want %v; %d keys", ok, tc.remembered, len(e.og.backoff))
			}
			if ok && (b.delay != ogBackoffMin || !b.until.Equal(clock.Now().Add(ogBackoffMin))) {
				t.Fatalf("back-off %+v", b)
			}
			if !strings.Contains(logs.String(), `"retry_in":"10s"`) {
				t.Fatalf("the failure was not logged with its back-off:\n%s", logs)
			}
		})
	}
}

// TestOGKeyParts: the parts a fill or a revalidation asks the origin for
// are those the key was built of, with no reading back, whatever the path
// holds ('|' included, as a normalised path may not, or a long path).
func TestOGKeyParts(t *testing.T) {
	for _, tc := range []struct {
		name, domain, path string
		platform           ogplatform.Platform
	}{
		{"root", ogDomain, "/", ogplatform.Default},
		{"nested", "d-1_x", "/blog/2026/launch-day", mustPlatform(t, "twitter")},
		{"bars in the path", "abc", "/a|b|c", mustPlatform(t, "linkedin")},
		{"empty path", "abc", "", mustPlatform(t, "facebook")},
		{"long path", "abc", "/" + strings.Repeat("x", 3000), ogplatform.Default},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := append(appendOGKey(nil, []byte(tc.domain), tc.platform), tc.path...)
			k := newOGKey(b, len(tc.domain), tc.platform)
			want := "o|" + tc.domain + "|" + tc.platform.Name + "|" + tc.path
			if k.key != want || k.domain != tc.domain || k.platform != tc.platform || k.path != tc.path {
				t.Fatalf("key %q: parts %q %q %q, want %q %q %q", k.key, k.domain, k.platform.Name, k.path, tc.domain, tc.platform.Name, tc.path)
			}
		})
	}
}

func mustPlatform(t *testing.T, name string) ogplatform.Platform {
	t.Helper()
	p, ok := ogplatform.ByName(name)
	if !ok {
		t.Fatalf("no platform %q", name)
	}
	return p
}

// TestPlatformMemo: the remembered platform of a User-Agent is always
// ogplatform.FromUserAgent's, whether it is read for the first time, again,
// or again after other User-Agents took its slot (2,000 User-Agents in 256
// slots collide); one longer than platformMemoMaxUA is not remembered.
func TestPlatformMemo(t *testing.T) {
	var uas []string
	for i, p := range ogplatform.All {
		uas = append(uas, p.UserAgent, strings.ToUpper(p.UserAgent), p.UserAgent+" ")
		for j := range 150 {
			uas = append(uas, fmt.Sprintf("%s/%d.%d", p.UserAgent, i, j))
		}
	}
	uas = append(uas, "", strings.Repeat("a", 600)+"Twitterbot", "Twitterbot"+strings.Repeat("a", 600))
	m := platformMemo{seed: maphash.MakeSeed()}
	for round := range 3 {
		for _, ua := range uas {
			if got, want := m.of([]byte(ua)), ogplatform.FromUserAgent(ua); got != want {
				t.Fatalf("round %d: platform of %q = %s, want %s", round, ua, got.Name, want.Name)
			}
		}
	}
	remembered := 0
	for i := range m.slots {
		if p := m.slots[i].Load(); p != nil {
			remembered++
			if len(p.ua) > platformMemoMaxUA {
				t.Fatalf("a %d-byte User-Agent is remembered", len(p.ua))
			}
		}
	}
	if remembered == 0 {
		t.Fatal("no User-Agent remembered")
	}
}

// TestOGHeaderNamesAsFasthttpSpellsThem: the header names an OG answer
// sets without normalising are those SetBytesKV would write, byte for byte.
func TestOGHeaderNamesAsFasthttpSpellsThem(t *testing.T) {
	for _, tc := range []struct{ name, canon []byte }{
		{hdrVary, canonVary}, {hdrETag, canonETag}, {hdrCache, canonCache}, {hdrLastMod, canonLastMod},
		{hdrNoSniff, canonNoSniff}, {hdrRequestID, canonRequestID},
	} {
		t.Run(string(tc.name), func(t *testing.T) {
			var normalised, canonical fasthttp.ResponseHeader
			normalised.SetBytesKV(tc.name, []byte("v"))
			canonical.SetCanonical(tc.canon, []byte("v"))
			if a, b := normalised.String(), canonical.String(); a != b {
				t.Fatalf("SetBytesKV writes\n%q\nSetCanonical\n%q", a, b)
			}
		})
	}
}
