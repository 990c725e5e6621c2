package edge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pictorhq/pictor/edge/origins"
	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// Tests of an edge in front of several origins, over loopback: origins that
// stop (their listener and connections closed, as when their process ends)
// and start again on the same address, that reset connections, that answer
// errors. Waits are on the origin pool's state changes and counted in
// rounds of health checks, never in time.

// failWait bounds every wait for something that must happen.
const failWait = 30 * time.Second

const clusterToken = "cluster-edge-token-0123456789"

// purgeLog is the purge log the origins of a test share, as origins over
// one store do.
type purgeLog struct {
	mu     sync.Mutex
	events []contract.Event
	grew   chan struct{}
}

func newPurgeLog() *purgeLog { return &purgeLog{grew: make(chan struct{})} }

// add appends a purge and returns its sequence number.
func (l *purgeLog) add(kind string, ids ...string) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	seq := uint64(len(l.events)) + 1
	l.events = append(l.events, contract.Event{Seq: seq, Kind: kind, IDs: ids})
	close(l.grew)
	l.grew = make(chan struct{})
	return seq
}

// after returns the events after since, and a channel closed at the next.
func (l *purgeLog) after(since uint64) ([]contract.Event, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events[min(int(since), len(l.events)):]), l.grew
}

// clusterOrigin answers as an origin does: /healthz, the test image, the
// purge channel over a shared log, /v1/fail with 500 and anything else
// with 200 and the length of the body it read. It remembers every request
// but health checks and streams, as "METHOD path length".
type clusterOrigin struct {
	t       *testing.T
	name    string
	addr    string
	log     *purgeLog
	png     []byte
	handler http.Handler
	// overlap makes the purge channel replay this many events before the
	// position asked for, as an origin that is behind would.
	overlap uint64
	// failImage answers the image with 500.
	failImage atomic.Bool

	mu      sync.Mutex
	srv     *httptest.Server
	seen    []string
	streams chan uint64 // the position each stream opened at
	acks    chan uint64
}

func newClusterOrigin(t *testing.T, name string, log *purgeLog) *clusterOrigin {
	t.Helper()
	o := &clusterOrigin{t: t, name: name, log: log, png: redPNG(),
		streams: make(chan uint64, 64), acks: make(chan uint64, 1024)}
	o.handler = http.HandlerFunc(o.serveHTTP)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.addr = ln.Addr().String()
	o.listen(ln)
	t.Cleanup(o.stop)
	return o
}

func (o *clusterOrigin) url() string { return "http://" + o.addr }

func (o *clusterOrigin) listen(ln net.Listener) {
	srv := httptest.NewUnstartedServer(o.handler)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	o.mu.Lock()
	o.srv = srv
	o.mu.Unlock()
}

// stop closes the listener and every connection, streams included.
func (o *clusterOrigin) stop() {
	o.mu.Lock()
	srv := o.srv
	o.srv = nil
	o.mu.Unlock()
	if srv != nil {
		srv.CloseClientConnections()
		srv.Close()
	}
}

// start listens again on the same address.
func (o *clusterOrigin) start() {
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		o.t.Fatalf("listen again on %s: %v", o.addr, err)
	}
	o.listen(ln)
}

// requests returns what the origin was asked, but checks and streams.
func (o *clusterOrigin) requests() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.seen)
}

func (o *clusterOrigin) serveHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/healthz":
		w.Write([]byte(`{"status":"ok"}`))
		return
	case contract.StreamPath:
		o.stream(w, r)
		return
	}
	n, err := io.Copy(io.Discard, r.Body)
	o.mu.Lock()
	o.seen = append(o.seen, fmt.Sprintf("%s %s %d", r.Method, r.URL.Path, n))
	o.mu.Unlock()
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	switch {
	case r.URL.Path == "/v1/fail" || (r.URL.Path == "/v1/image/"+testID+".png" && o.failImage.Load()):
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(`{"error":"Internal Server Error","message":"test origin failure","statusCode":500}`))
	case r.URL.Path == "/v1/image/"+testID+".png":
		w.Header().Set("Content-Type", "image/png")
		w.Header().Set("ETag", `"0123456789abcdef"`)
		w.Header().Set(contract.HeaderOrg, "org-1")
		w.Header().Set(contract.HeaderImage, testID)
		w.Write(o.png)
	default:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"origin":%q,"received":%d}`, o.name, n)
	}
}

// stream serves the purge channel from the shared log: the events after
// the edge's position (less overlap), a Ready frame, then each new event
// and a Ready frame after it.
func (o *clusterOrigin) stream(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+clusterToken || o.log == nil {
		w.Header().Set("Connection", "close")
		http.Error(w, `{"error":"Unauthorized","message":"Invalid edge token","statusCode":401}`, http.StatusUnauthorized)
		return
	}
	since, _ := strconv.ParseUint(r.URL.Query().Get(contract.StreamSince), 10, 64)
	o.streams <- since
	rc := http.NewResponseController(w)
	rc.EnableFullDuplex()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc.Flush()
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		sc := bufio.NewScanner(r.Body)
		for sc.Scan() {
			n, _ := strconv.ParseUint(sc.Text(), 10, 64)
			o.acks <- n
		}
	}()
	sent := since - min(since, o.overlap)
	for {
		evs, grew := o.log.after(sent)
		for _, ev := range evs {
			raw, _ := json.Marshal(ev)
			fmt.Fprintf(w, "%s\n", raw)
			sent = ev.Seq
		}
		raw, _ := json.Marshal(contract.Event{Seq: sent, Kind: contract.Ready})
		fmt.Fprintf(w, "%s\n", raw)
		if rc.Flush() != nil {
			return
		}
		select {
		case <-grew:
		case <-gone:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// nextStream returns the position of the next stream an edge opened.
func (o *clusterOrigin) nextStream(t *testing.T) uint64 {
	t.Helper()
	select {
	case since := <-o.streams:
		return since
	case <-time.After(failWait):
		t.Fatalf("no stream opened on %s", o.name)
	}
	return 0
}

// ack waits for the next acknowledgement the origin received.
func (o *clusterOrigin) ack(t *testing.T, want uint64) {
	t.Helper()
	select {
	case got := <-o.acks:
		if got != want {
			t.Fatalf("%s: acknowledged %d, want %d", o.name, got, want)
		}
	case <-time.After(failWait):
		t.Fatalf("%s: no acknowledgement of %d", o.name, want)
	}
}

// newClusterEdge starts an edge in front of urls, checking them every
// interval, and returns it with its base URL and a client of its own.
func newClusterEdge(t *testing.T, interval time.Duration, tune func(*Config), urls ...string) (*Edge, string, *http.Client) {
	t.Helper()
	e := newTunedEdge(t, "", func(c *Config) {
		c.OriginURLs = urls
		c.OriginCheckInterval = interval
		// A dead origin refuses at once; a live one has all the time it
		// needs on a loaded machine.
		c.OriginCheckTimeout = failWait
		if tune != nil {
			tune(c)
		}
	})
	base := startEdge(t, e)
	client := &http.Client{Timeout: failWait, Transport: &http.Transport{Proxy: nil}}
	// Before Stop: an idle connection would hold up the drain.
	t.Cleanup(client.CloseIdleConnections)
	return e, base, client
}

// noChecks is an interval the tests never reach: the pool checks once, as
// it starts, and then only requests tell it an origin is down.
const noChecks = time.Hour

// send sends a request to the edge and reads the whole answer.
func send(t *testing.T, client *http.Client, method, url string, body io.Reader) *apitest.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: body: %v", method, url, err)
	}
	return &apitest.Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// answeredBy returns which origin answered a relayed request.
func answeredBy(t *testing.T, r *apitest.Response) string {
	t.Helper()
	apitest.WantStatus(t, r, 200)
	var out struct{ Origin string }
	r.Decode(t, &out)
	return out.Origin
}

func waitOrigin(t *testing.T, e *Edge, o *origins.Origin, up bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), failWait)
	defer cancel()
	if err := e.origins.Wait(ctx, o, up); err != nil {
		t.Fatal(err)
	}
}

// waitRound waits for a round of checks to end.
func waitRound(t *testing.T, e *Edge) {
	t.Helper()
	waitFor(t, failWait, "a round of health checks", func() bool { return e.origins.Rounds() > 0 })
}

func failovers(t *testing.T, e *Edge) string {
	t.Helper()
	return metric(t, e, "pictor_edge_origin_failovers_total")
}

// TestOriginStopsAndComesBack: with two origins, requests take turns;
// when one stops, the health checks take it out within three rounds (the
// one in flight, then two that fail) and requests go to the other without
// trying it; when it comes back, one check brings it back in, and requests
// reach it again. The metrics follow.
func TestOriginStopsAndComesBack(t *testing.T) {
	o1, o2 := newClusterOrigin(t, "o1", nil), newClusterOrigin(t, "o2", nil)
	e, base, client := newClusterEdge(t, 10*time.Millisecond, nil, o1.url(), o2.url())
	first := e.origins.Origins()[0]

	by := map[string]int{}
	for range 4 {
		by[answeredBy(t, send(t, client, "GET", base+"/v1/echo", nil))]++
	}
	if by["o1"] != 2 || by["o2"] != 2 {
		t.Fatalf("answers by origin %v, want two each", by)
	}

	o1.stop()
	from := e.origins.Rounds()
	waitOrigin(t, e, first, false)
	if n := e.origins.Rounds() - from; n > 3 {
		t.Fatalf("down after %d rounds of checks, want at most 3", n)
	}
	before := failovers(t, e)
	for i := range 6 {
		if got := answeredBy(t, send(t, client, "GET", base+"/v1/echo", nil)); got != "o2" {
			t.Fatalf("request %d answered by %s", i, got)
		}
	}
	if after := failovers(t, e); after != before {
		t.Fatalf("failovers %s → %s: a request tried the origin known down", before, after)
	}
	for name, want := range map[string]string{
		`pictor_edge_origin_up{origin="` + o1.url() + `"}`:                               "0",
		`pictor_edge_origin_up{origin="` + o2.url() + `"}`:                               "1",
		`pictor_edge_origin_requests_total{origin="` + o2.url() + `",result="answered"}`: "8",
	} {
		if got := metric(t, e, name); got != want {
			t.Errorf("%s = %q, want %s", name, got, want)
		}
	}

	o1.start()
	from = e.origins.Rounds()
	waitOrigin(t, e, first, true)
	if n := e.origins.Rounds() - from; n > 2 {
		t.Fatalf("up after %d rounds of checks, want at most 2", n)
	}
	by = map[string]int{}
	for range 4 {
		by[answeredBy(t, send(t, client, "GET", base+"/v1/echo", nil))]++
	}
	if by["o1"] != 2 || by["o2"] != 2 {
		t.Fatalf("answers by origin once o1 is back %v, want two each", by)
	}
	if got := metric(t, e, `pictor_edge_origin_up{origin="`+o1.url()+`"}`); got != "1" {
		t.Fatalf("up gauge of o1 back: %q", got)
	}
}

// TestRequestFindsOriginDown: without waiting for a check, the first
// request that finds an origin stopped takes it out and goes to the other
// one: every request succeeds, and only one fails over.
func TestRequestFindsOriginDown(t *testing.T) {
	o1, o2 := newClusterOrigin(t, "o1", nil), newClusterOrigin(t, "o2", nil)
	e, base, client := newClusterEdge(t, noChecks, nil, o1.url(), o2.url())
	waitRound(t, e)
	answeredBy(t, send(t, client, "GET", base+"/v1/echo", nil)) // a connection to each origin
	answeredBy(t, send(t, client, "GET", base+"/v1/echo", nil))
	o1.stop()
	for i := range 6 {
		if got := answeredBy(t, send(t, client, "GET", base+"/v1/echo", nil)); got != "o2" {
			t.Fatalf("request %d answered by %s", i, got)
		}
	}
	if e.origins.Origins()[0].Up() {
		t.Fatal("the stopped origin is still up")
	}
	if got := failovers(t, e); got != "1" {
		t.Fatalf("%s failovers, want 1", got)
	}
}

// TestPostRetriedWhenConnectFails: a POST whose connection to the first
// origin fails is sent to the other, once, with its whole body (streamed:
// none of it was read for the failed attempt).
func TestPostRetriedWhenConnectFails(t *testing.T) {
	dead := "http://" + apitest.ClosedAddr(t)
	o2 := newClusterOrigin(t, "o2", nil)
	e, base, client := newClusterEdge(t, noChecks, nil, dead, o2.url())
	body := noisy(1 << 20)
	// Chunked, and larger than what fasthttp reads ahead: the body streams.
	r := send(t, client, "POST", base+"/v1/upload", io.MultiReader(bytes.NewReader(body)))
	if got := answeredBy(t, r); got != "o2" {
		t.Fatalf("answered by %s", got)
	}
	want := fmt.Sprintf("POST /v1/upload %d", len(body))
	if got := o2.requests(); !slices.Equal(got, []string{want}) {
		t.Fatalf("o2 was asked %q, want once %q", got, want)
	}
	if got := failovers(t, e); got != "1" {
		t.Fatalf("%s failovers, want 1 (the first request goes to the first origin)", got)
	}
	// The dead origin is out: the next POST goes straight to o2.
	answeredBy(t, send(t, client, "POST", base+"/v1/upload", strings.NewReader("small")))
	if got := failovers(t, e); got != "1" {
		t.Fatalf("%s failovers after the second POST, want 1", got)
	}
	if got := o2.requests(); len(got) != 2 {
		t.Fatalf("o2 was asked %q", got)
	}
}

// breakingServer accepts, reads a request's head, and ends the connection
// without answering: with a reset (RST) or closed (FIN).
func breakingServer(t *testing.T, reset bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			br := bufio.NewReader(c)
			for {
				line, err := br.ReadString('\n')
				if err != nil || line == "\r\n" {
					break
				}
			}
			if reset {
				c.(*net.TCPConn).SetLinger(0)
			}
			c.Close()
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return "http://" + ln.Addr().String()
}

func resetting(t *testing.T) string { return breakingServer(t, true) }
func closing(t *testing.T) string   { return breakingServer(t, false) }

// TestBrokenConnectionRetried: a GET or HEAD (relayed or a fill) whose
// connection breaks after the origin read it and before the answer began,
// reset or closed, goes to the next origin; a POST does not (the origin may
// have acted on it), nor a GET whose body was sent (the edge streams
// bodies, and keeps none to send again): they are answered 502 in the
// standard body.
func TestBrokenConnectionRetried(t *testing.T) {
	image := "/v1/image/" + testID
	for _, tc := range []struct {
		name, method, path, body string
		first                    func(*testing.T) string
		retried                  bool
	}{
		{"GET reset", "GET", "/v1/echo", "", resetting, true},
		{"GET closed", "GET", "/v1/echo", "", closing, true},
		{"HEAD reset", "HEAD", "/v1/echo", "", resetting, true},
		{"fill reset", "GET", image, "", resetting, true},
		{"fill closed", "GET", image, "", closing, true},
		{"POST reset", "POST", "/v1/echo", "hello", resetting, false},
		{"POST closed", "POST", "/v1/echo", "hello", closing, false},
		// Its body went out with its head: it cannot be sent again.
		{"GET with a body, reset", "GET", "/v1/echo", strings.Repeat("x", 4096), resetting, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o2 := newClusterOrigin(t, "o2", nil)
			e, base, client := newClusterEdge(t, noChecks, nil, tc.first(t), o2.url())
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			r := send(t, client, tc.method, base+tc.path, body)
			asked := o2.requests()
			if !tc.retried {
				apitest.WantError(t, r, http.StatusBadGateway)
				if len(asked) != 0 || failovers(t, e) != "0" {
					t.Fatalf("the %s was sent again: o2 was asked %q", tc.method, asked)
				}
				return
			}
			apitest.WantStatus(t, r, http.StatusOK)
			if len(asked) != 1 || failovers(t, e) != "1" {
				t.Fatalf("o2 was asked %q, %s failovers; want once", asked, failovers(t, e))
			}
			if tc.path == image && !bytes.Equal(r.Body, o2.png) {
				t.Fatal("the fill is not the image")
			}
		})
	}
}

// TestOGFillRetried: an OG image's fill fails over as an image's does.
func TestOGFillRetried(t *testing.T) {
	og := newOGOrigin(t, contract.OGAsIs)
	e, base, _ := newClusterEdge(t, noChecks, func(c *Config) { c.Now = ogClock().Now }, resetting(t), og.URL)
	t.Cleanup(apitest.Client.CloseIdleConnections)
	r := ogGet(t, base, "GET", contract.OGPrefix+ogDomain+"/blog/post", "")
	apitest.WantStatus(t, r, 200)
	if !bytes.Equal(r.Body, og.image(contract.OGAsIs, "default", 1)) || failovers(t, e) != "1" {
		t.Fatalf("OG fill after a reset: %d bytes, %s failovers", len(r.Body), failovers(t, e))
	}
}

// TestLiveAnswerNotRetried: an origin's answer, even 500, is the answer:
// neither a relay nor a fill asks another origin.
func TestLiveAnswerNotRetried(t *testing.T) {
	for _, path := range []string{"/v1/fail", "/v1/image/" + testID} {
		t.Run(path, func(t *testing.T) {
			o1, o2 := newClusterOrigin(t, "o1", nil), newClusterOrigin(t, "o2", nil)
			o1.failImage.Store(true)
			o2.failImage.Store(true)
			e, base, client := newClusterEdge(t, noChecks, nil, o1.url(), o2.url())
			r := send(t, client, "GET", base+path, nil)
			apitest.WantError(t, r, http.StatusInternalServerError)
			if n := len(o1.requests()) + len(o2.requests()); n != 1 || failovers(t, e) != "0" {
				t.Fatalf("asked %q and %q", o1.requests(), o2.requests())
			}
		})
	}
}

// TestAllOriginsDown: with every origin down, a relay, a POST and a fill
// are answered 502 in the standard body at once (connections refused),
// never left waiting; the pool then has none healthy, and still tries
// them all.
func TestAllOriginsDown(t *testing.T) {
	e, base, client := newClusterEdge(t, 10*time.Millisecond, nil, "http://"+apitest.ClosedAddr(t), "http://"+apitest.ClosedAddr(t))
	for _, req := range []struct{ method, path, body string }{
		{"GET", "/v1/echo", ""}, {"POST", "/v1/echo", "hello"}, {"GET", "/v1/image/" + testID, ""},
		{"GET", "/v1/image/" + testID + ".jpg?width=10", ""}, {"GET", "/v1/echo", ""},
	} {
		var body io.Reader
		if req.body != "" {
			body = strings.NewReader(req.body)
		}
		apitest.WantError(t, send(t, client, req.method, base+req.path, body), http.StatusBadGateway)
	}
	for _, o := range e.origins.Origins() {
		if o.Up() {
			t.Fatalf("%s up", o)
		}
		if got := metric(t, e, `pictor_edge_origin_requests_total{origin="`+o.String()+`",result="failed"}`); got != "5" {
			t.Errorf("%s: %s failed requests counted, want 5", o, got)
		}
	}
}

// TestPurgesFollowAnotherOrigin: the edge follows one origin's purge
// channel; when that origin stops, it follows another's from its position,
// and applies each purge once: one the second origin sends again (it is
// behind) is acknowledged, not applied again.
func TestPurgesFollowAnotherOrigin(t *testing.T) {
	log := newPurgeLog()
	o1, o2 := newClusterOrigin(t, "o1", log), newClusterOrigin(t, "o2", log)
	o2.overlap = 1
	e, base, client := newClusterEdge(t, noChecks, func(c *Config) { c.EdgeToken = clusterToken }, o1.url(), o2.url())
	if since := o1.nextStream(t); since != 0 || !e.sub.Ready() {
		t.Fatalf("first stream on o1 since %d, ready %v", since, e.sub.Ready())
	}
	image := base + "/v1/image/" + testID
	fetches := func() int {
		n := 0
		for _, o := range []*clusterOrigin{o1, o2} {
			for _, r := range o.requests() {
				if strings.HasPrefix(r, "GET /v1/image/") {
					n++
				}
			}
		}
		return n
	}
	wantFetches := func(what string, want int) {
		t.Helper()
		r := send(t, client, "GET", image, nil)
		if r.Status != 200 || !bytes.Equal(r.Body, o1.png) {
			t.Fatalf("%s: GET image %d", what, r.Status)
		}
		if got := fetches(); got != want {
			t.Fatalf("%s: %d origin fetches, want %d", what, got, want)
		}
	}
	wantFetches("cold", 1)
	wantFetches("cached", 1)

	o1ack := log.add(contract.ImagesDeleted, testID)
	o1.ack(t, o1ack)
	wantFetches("after the purge from o1", 2)

	o1.stop()
	if since := o2.nextStream(t); since != o1ack {
		t.Fatalf("stream on o2 since %d, want %d", since, o1ack)
	}
	// o2 sends the first purge again: acknowledged, not applied again.
	o2.ack(t, o1ack)
	wantFetches("after o2 sent the purge again", 2)

	o2ack := log.add(contract.ImagesDeleted, testID)
	o2.ack(t, o2ack)
	wantFetches("after the purge from o2", 3)
	if got := e.sub.Last(); got != o2ack {
		t.Fatalf("position %d, want %d", got, o2ack)
	}
}

// TestConfigOrigins: OriginURL is the one-origin shorthand; OriginURLs,
// when set, are the origins. Validate names the flag and every bad URL,
// and refuses an origin given twice or none.
func TestConfigOrigins(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tune  func(*Config)
		want  []string // the origins, when valid
		names []string // in the error, when not
	}{
		{"the default", func(*Config) {}, []string{"http://127.0.0.1:8081"}, nil},
		{"one by the shorthand", func(c *Config) { c.OriginURL = "http://10.0.0.1:8081" }, []string{"http://10.0.0.1:8081"}, nil},
		{"several", func(c *Config) { c.OriginURLs = []string{"http://10.0.0.1:8081", "http://10.0.0.2:8081"} },
			[]string{"http://10.0.0.1:8081", "http://10.0.0.2:8081"}, nil},
		{"none", func(c *Config) { c.OriginURL = "" }, nil, []string{"--origin-url is required"}},
		{"bad shorthand", func(c *Config) { c.OriginURL = "localhost:8081" }, nil, []string{"--origin-url", `"localhost:8081"`}},
		{"each bad one named", func(c *Config) { c.OriginURLs = []string{"ftp://a", "http://10.0.0.1:8081", "b"} },
			nil, []string{"--origin-url", `"ftp://a"`, `"b"`}},
		{"twice", func(c *Config) { c.OriginURLs = []string{"http://10.0.0.1:8081", "http://10.0.0.1:8081/"} },
			nil, []string{"--origin-url", "twice"}},
		{"no check interval", func(c *Config) { c.OriginCheckInterval = 0 }, nil, []string{"--origin-check-interval"}},
		{"no check timeout", func(c *Config) { c.OriginCheckTimeout = -time.Second }, nil, []string{"--origin-check-timeout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.tune(&cfg)
			err := cfg.Validate()
			if tc.names == nil {
				if err != nil || !slices.Equal(cfg.Origins(), tc.want) {
					t.Fatalf("Validate = %v, origins %q, want %q", err, cfg.Origins(), tc.want)
				}
				return
			}
			for _, n := range tc.names {
				if err == nil || !strings.Contains(err.Error(), n) {
					t.Fatalf("Validate = %v, want it to name %s", err, n)
				}
			}
			if strings.Contains(err.Error(), "10.0.0.1") && !strings.Contains(err.Error(), "twice") {
				t.Fatalf("Validate = %v names a valid URL", err)
			}
		})
	}
}
