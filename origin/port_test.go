package origin_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/edge"
	"github.com/pictorhq/pictor/origin"
	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// rawConn dials the origin's port.
func (o *testOrigin) rawConn(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(o.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// basic is the Authorization header of creds.
func basic(c apitest.Creds) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(c.APIID+":"+c.APIKey))
}

// wantClosingError reads one answer from c and checks that it is the
// standard error body with status and fragment in its message, that it
// says Connection: close, and that the connection then closes.
func wantClosingError(t *testing.T, c net.Conn, status int, fragment string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	r := &apitest.Response{Status: resp.StatusCode, Header: resp.Header, Body: body}
	apitest.WantMessage(t, apitest.WantError(t, r, status), fragment)
	if !resp.Close {
		t.Fatalf("%d answer without Connection: close", status)
	}
	if _, err := br.ReadByte(); err == nil || isTimeout(err) {
		t.Fatalf("the connection stayed open after the %d (%v)", status, err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// sendSlowly writes p to c, chunk bytes every interval, until done closes.
func sendSlowly(c net.Conn, p []byte, chunk int, interval time.Duration, done <-chan struct{}) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for len(p) > 0 {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		n := min(chunk, len(p))
		if _, err := c.Write(p[:n]); err != nil {
			return
		}
		p = p[n:]
	}
}

// TestPortAnswersUseStandardBody: every answer of the origin's port carries
// the standard error body, those net/http gives before any handler runs
// included, and a request that cannot be read whole closes its connection:
// headers too large (431), a request net/http cannot parse (400), headers
// that stop arriving (408), a body slower than the minimum rate (408, from
// each decoder: JSON, URL-encoded and multipart).
func TestPortAnswersUseStandardBody(t *testing.T) {
	o := startOrigin(t, func(c *origin.Config) {
		c.HeaderTimeout = 500 * time.Millisecond
		c.BodyGrace = time.Second
		c.BodyMinRate = 1 << 10
	})
	auth := basic(o.Owner)
	tests := []struct {
		name, request, fragment string
		status                  int
	}{
		{"headers too large", "GET /v1/images HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 70<<10) + "\r\n\r\n", "64 KiB", 431},
		{"malformed request line", "GARBAGE\r\n\r\n", "Malformed HTTP request", 400},
		{"malformed header", "GET /v1/images HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n", "Malformed HTTP request", 400},
		{"headers that stop arriving", "GET /v1/images HTTP/1.1\r\nHost: x\r\nAuthor", "not received in time", 408},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := o.rawConn(t)
			io.WriteString(c, tc.request)
			wantClosingError(t, c, tc.status, tc.fragment)
		})
	}

	var mp bytes.Buffer
	mw := multipart.NewWriter(&mp)
	mw.WriteField("html", strings.Repeat("<b>x</b>", 300))
	mw.Close()
	bodies := []struct{ name, ct, body string }{
		{"json", "application/json", `{"html":"` + strings.Repeat("x", 2400) + `"}`},
		{"urlencoded", "application/x-www-form-urlencoded", "html=" + strings.Repeat("x", 2400)},
		{"multipart", mw.FormDataContentType(), mp.String()},
	}
	for _, b := range bodies {
		t.Run("slow "+b.name+" body", func(t *testing.T) {
			c := o.rawConn(t)
			fmt.Fprintf(c, "POST /v1/image HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s",
				auth, b.ct, len(b.body), b.body[:100])
			done := make(chan struct{})
			defer close(done)
			// 50 bytes a second, a twentieth of the minimum.
			go sendSlowly(c, []byte(b.body[100:]), 5, 100*time.Millisecond, done)
			wantClosingError(t, c, 408, "not received in time")
		})
	}
	// A body that keeps the rate is read whole: here a creation's, too
	// large a viewport for the plan, which the body must be read to know.
	t.Run("body at the rate", func(t *testing.T) {
		c := o.rawConn(t)
		body := `{"html":"` + strings.Repeat("x", 3000) + `","viewport_width":1,"viewport_height":1,"device_scale":9}`
		fmt.Fprintf(c, "POST /v1/image HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", auth, len(body))
		done := make(chan struct{})
		defer close(done)
		go sendSlowly(c, []byte(body), 200, 20*time.Millisecond, done) // 10 KiB/s: ten times the minimum
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		apitest.WantField(t, &apitest.Response{Status: resp.StatusCode, Header: resp.Header, Body: b}, "device_scale")
	})
}

// TestMalformedRequestInput: a query string that is not valid
// percent-encoding is a 400 naming the parameter on every endpoint that
// reads one (url.Values would have dropped it), and a form of many tiny
// fields is refused naming the field limit, not the byte limit.
func TestMalformedRequestInput(t *testing.T) {
	o := startOrigin(t)
	o.create(t, o.Owner, map[string]any{"html": redBox})
	tests := []struct{ path, field string }{
		{"/v1/images?page_token=%%%", "page_token"},
		{"/v1/images?count=2&page_token=ab%zz", "page_token"},
		{"/v1/images?%zz=1", "query"},
		{"/v1/api-keys?count=%zz", "count"},
		{"/v1/api-keys?page_start=%", "page_start"},
		{"/v1/template?page_start=%", "page_start"},
		{"/v1/usage?x=%", "x"},
		{"/v1/images?count=1;page_token=x", "count"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			apitest.WantField(t, o.do(t, apitest.Request{Method: "GET", Path: tc.path, Creds: &o.Owner}), tc.field)
		})
	}
	// Signed URLs sign the raw query: a signed, malformed one is a 400 too.
	for _, q := range []string{"html=abc%zz", "html=abc&device_scale=%"} {
		field := strings.SplitN(q[strings.LastIndex(q, "&")+1:], "=", 2)[0]
		path := "/v1/image/create-and-render/" + o.Owner.APIID + "/" + sign(o.Owner.APIKey, q) + "?" + q
		apitest.WantField(t, o.get(t, path), field)
	}
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/images?count=1&page_token=", Creds: &o.Owner}), 200)

	var mp bytes.Buffer
	mw := multipart.NewWriter(&mp)
	mw.WriteField("html", redBox)
	for i := range 50_000 {
		mw.WriteField(fmt.Sprint("f", i), "")
	}
	mw.Close()
	form := url.Values{"html": {redBox}}
	for i := range 50_000 {
		form.Set(fmt.Sprint("f", i), "")
	}
	for _, tc := range []struct{ name, ct, body string }{
		{"multipart", mw.FormDataContentType(), mp.String()},
		{"urlencoded", "application/x-www-form-urlencoded", form.Encode()},
	} {
		t.Run(tc.name+" of 50,000 fields", func(t *testing.T) {
			if len(tc.body) >= 7<<20 {
				t.Fatalf("%d bytes: not below the byte limit", len(tc.body))
			}
			r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &o.Owner, Raw: tc.body, ContentType: tc.ct})
			apitest.WantMessage(t, apitest.WantError(t, r, 413), "more than 1000 form fields")
		})
	}
}

// signURL is a create-and-render URL of query signed by c.
func signURL(c apitest.Creds, query string) string {
	return "/v1/image/create-and-render/" + c.APIID + "/" + sign(c.APIKey, query) + "?" + query
}

// TestListNewestFirstWithSignedImages: images created through signed URLs
// (content-addressed ids, not time-ordered) take their place in the list
// by creation like any other, in every page size, without duplicates or
// gaps; the same signed URL again adds nothing.
func TestListNewestFirstWithSignedImages(t *testing.T) {
	o := startOrigin(t)
	var created []string // oldest first
	for i := range 9 {
		if i%2 == 0 {
			id, _ := o.create(t, o.Owner, map[string]any{"html": fmt.Sprint("api ", i), "dedupe_duration_s": 0})
			created = append(created, id)
		} else {
			r := o.get(t, signURL(o.Owner, "html="+url.QueryEscape(fmt.Sprint("signed ", i))))
			apitest.WantStatus(t, r, 200)
			created = append(created, r.Header.Get("X-Pictor-Image"))
		}
		o.Clock.Advance(time.Second)
	}
	apitest.WantStatus(t, o.get(t, signURL(o.Owner, "html=signed+1")), 200) // reused, not created again
	want := make([]string, len(created))
	for i, id := range created {
		want[len(created)-1-i] = id
	}
	for _, count := range []int{1, 2, 4, 50} {
		var got []string
		tok := ""
		for page := 0; ; page++ {
			path := fmt.Sprintf("/v1/images?count=%d", count)
			if tok != "" {
				path += "&page_token=" + url.QueryEscape(tok)
			}
			r := o.do(t, apitest.Request{Method: "GET", Path: path, Creds: &o.Owner})
			apitest.WantStatus(t, r, 200)
			var p struct {
				Images []struct{ ID string }
				Next   *string `json:"next_page_token"`
			}
			if err := json.Unmarshal(r.Body, &p); err != nil {
				t.Fatal(err)
			}
			for _, img := range p.Images {
				got = append(got, img.ID)
			}
			if p.Next == nil {
				break
			}
			if page > len(want) {
				t.Fatal("the list does not end")
			}
			tok = *p.Next
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("pages of %d:\n got %v\nwant %v", count, got, want)
		}
	}
}

// TestStopIsBounded: Stop returns within its deadline and a small bound
// while a client holds a partial body and a long render is being waited
// for: the render's waiter is answered 503 and the partial body's
// connection closed, neither left to the clients.
func TestStopIsBounded(t *testing.T) {
	o := startOrigin(t)
	_, u := o.create(t, o.Owner, map[string]any{"html": redBox, "ms_delay": 10000})
	long := o.rawConn(t) // waits for a render of 10 s
	fmt.Fprintf(long, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", strings.TrimPrefix(u, o.URL))
	partial := o.rawConn(t) // holds a body it does not send
	fmt.Fprintf(partial, "POST /v1/image HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"html\":", basic(o.Owner))
	deadline := time.Now().Add(30 * time.Second)
	for o.origin.InFlight() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests in flight, want 2", o.origin.InFlight())
		}
		time.Sleep(10 * time.Millisecond) // polling the count, not waiting for an event
	}

	const grace = time.Second
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	start := time.Now()
	err := o.origin.Stop(ctx)
	took := time.Since(start)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Stop with requests left: %v, want the grace's end reported", err)
	}
	if strings.Contains(fmt.Sprint(err), "still running") {
		t.Errorf("requests outlived the stop: %v", err)
	}
	t.Logf("Stop took %v", took)
	if bound := grace + 5*time.Second; took > bound {
		t.Fatalf("Stop took %v, more than %v", took, bound)
	}
	// The request waiting for its render was told, the one waiting for its
	// body was closed; both connections are closed.
	wantClosingError(t, long, 503, "shutting down")
	partial.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(partial); isTimeout(err) {
		t.Fatal("the partial body's connection is still open after Stop")
	}
}

// TestConfigRequestLimits: the default request limits hold the origin no
// stricter than an edge's defaults with the relay's margin; a negative
// one, or no header timeout or body rate at all, is refused naming its
// flag, as the edge refuses them.
func TestConfigRequestLimits(t *testing.T) {
	c := origin.DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.HeaderTimeout != origin.DefaultHeaderTimeout || c.BodyGrace != origin.DefaultBodyGrace || c.BodyMinRate != origin.DefaultBodyMinRate {
		t.Fatalf("defaults: %v %v %d", c.HeaderTimeout, c.BodyGrace, c.BodyMinRate)
	}
	ec := edge.DefaultConfig()
	if origin.DefaultBodyGrace < ec.BodyGrace+5*time.Second || origin.DefaultBodyMinRate > ec.BodyMinRate {
		t.Fatalf("the origin's body limits (%v, %d B/s) are stricter than the edge's (%v, %d B/s) with a 5 s margin",
			origin.DefaultBodyGrace, origin.DefaultBodyMinRate, ec.BodyGrace, ec.BodyMinRate)
	}
	for _, tt := range []struct {
		name, flag string
		set        func(*origin.Config)
	}{
		{"negative header timeout", "--header-timeout", func(c *origin.Config) { c.HeaderTimeout = -time.Second }},
		{"no header timeout", "--header-timeout", func(c *origin.Config) { c.HeaderTimeout = 0 }},
		{"negative body grace", "--body-grace", func(c *origin.Config) { c.BodyGrace = -time.Second }},
		{"negative body rate", "--body-min-rate", func(c *origin.Config) { c.BodyMinRate = -1 }},
		{"no body rate", "--body-min-rate", func(c *origin.Config) { c.BodyMinRate = 0 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := origin.DefaultConfig()
			tt.set(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.flag) {
				t.Errorf("%s: %v", tt.flag, err)
			}
		})
	}
}
