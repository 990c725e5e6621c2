package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/image/webp"
	"golang.org/x/sys/unix"

	"github.com/pictorhq/pictor/origin/contract/logging"
)

// Creds are Basic-auth credentials.
type Creds struct{ APIID, APIKey string }

// Request is one HTTP call.
type Request struct {
	Method      string
	Path        string
	Creds       *Creds
	JSON        any    // marshalled as the body when set
	Raw         string // the body when JSON is nil
	ContentType string
	Header      map[string]string
}

// Response is a fully read HTTP answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Object decodes the body as a JSON object.
func (r *Response) Object(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, r.Body)
	}
	return m
}

// Decode decodes the body into v.
func (r *Response) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode body: %v\n%s", err, r.Body)
	}
}

// Client is the HTTP client tests use: no environment proxy, generous pool.
var Client = &http.Client{
	Timeout:   2 * time.Minute,
	Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 128},
}

// Validator, when set, checks every exchange of Do and Send: the request
// as sent (its body in reqBody) and the whole answer. The origin's tests
// set it to validate against the OpenAPI document, so that any answer that
// disagrees with it fails the test that produced it: Do fails its test,
// Send returns the error. Set it before the first request (TestMain).
var Validator func(req *http.Request, reqBody []byte, resp *Response) error

// Do sends r to base and reads the whole answer.
func Do(t testing.TB, base string, r Request) *Response {
	t.Helper()
	resp, err := Send(base, r)
	if err != nil {
		t.Fatalf("%s %s: %v", r.Method, r.Path, err)
	}
	return resp
}

// Send is Do without a testing.TB, for goroutines.
func Send(base string, r Request) (*Response, error) {
	var body io.Reader
	var sent []byte
	ct := r.ContentType
	switch {
	case r.JSON != nil:
		b, err := json.Marshal(r.JSON)
		if err != nil {
			return nil, err
		}
		body, sent = bytes.NewReader(b), b
		if ct == "" {
			ct = "application/json"
		}
	case r.Raw != "":
		body, sent = strings.NewReader(r.Raw), []byte(r.Raw)
	}
	req, err := http.NewRequest(r.Method, base+r.Path, body)
	if err != nil {
		return nil, err
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if r.Creds != nil {
		req.SetBasicAuth(r.Creds.APIID, r.Creds.APIKey)
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	resp, err := Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	out := &Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
	if Validator != nil {
		if err := Validator(req, sent, out); err != nil {
			return out, fmt.Errorf("%s %s answered %d, which the API description does not allow: %w", r.Method, r.Path, out.Status, err)
		}
	}
	return out, nil
}

// WantStatus fails unless the status matches.
func WantStatus(t testing.TB, r *Response, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status = %d, want %d; body: %s", r.Status, status, r.Body)
	}
}

// WantError checks the status and the standard error body, and returns it.
func WantError(t testing.TB, r *Response, status int) map[string]any {
	t.Helper()
	WantStatus(t, r, status)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("error Content-Type = %q", ct)
	}
	m := r.Object(t)
	if s, ok := m["error"].(string); !ok || s == "" {
		t.Fatalf("error body lacks error: %s", r.Body)
	}
	if msg, ok := m["message"].(string); !ok || msg == "" {
		t.Fatalf("error body lacks message: %s", r.Body)
	}
	if code, ok := m["statusCode"].(float64); !ok || int(code) != status {
		t.Fatalf("statusCode = %v, want %d", m["statusCode"], status)
	}
	return m
}

// WantField checks a 400 whose validation_errors name path.
func WantField(t testing.TB, r *Response, path string) {
	t.Helper()
	m := WantError(t, r, http.StatusBadRequest)
	list, _ := m["validation_errors"].([]any)
	for _, item := range list {
		fe, _ := item.(map[string]any)
		if fe["path"] == path {
			if msg, _ := fe["message"].(string); msg == "" {
				t.Fatalf("validation error for %s has no message", path)
			}
			return
		}
	}
	t.Fatalf("validation_errors do not name %q: %s", path, r.Body)
}

// WantMessage fails unless the error message contains each fragment.
func WantMessage(t testing.TB, m map[string]any, fragments ...string) {
	t.Helper()
	msg, _ := m["message"].(string)
	for _, f := range fragments {
		if !strings.Contains(msg, f) {
			t.Fatalf("message %q does not mention %q", msg, f)
		}
	}
}

// Buffer is a bytes.Buffer safe for concurrent use, which a test can wait
// on (Wait).
type Buffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // closed by the next Write; nil until Wait asks
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written != nil {
		close(s.written)
		s.written = nil
	}
	return s.b.Write(p)
}

// Wait returns once match holds for the buffer's contents, checking them
// again after each write, or ctx's error when ctx ends first.
func (s *Buffer) Wait(ctx context.Context, match func(text string) bool) error {
	for {
		s.mu.Lock()
		text := s.b.String()
		if s.written == nil {
			s.written = make(chan struct{})
		}
		written := s.written
		s.mu.Unlock()
		if match(text) {
			return nil
		}
		select {
		case <-written:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// CaptureLogs sends the default logger's records, debug included, to the
// returned buffer until the test ends, in the service's own format.
func CaptureLogs(t testing.TB) *Buffer {
	t.Helper()
	buf := &Buffer{}
	prev := slog.Default()
	slog.SetDefault(logging.New(buf, slog.LevelDebug))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return buf
}

// Clock is a settable clock for Config.Now.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// DecodeImage decodes a PNG, JPEG or WebP body and checks its Content-Type.
func DecodeImage(t testing.TB, r *Response) image.Image {
	t.Helper()
	ct := r.Header.Get("Content-Type")
	var (
		img image.Image
		err error
	)
	switch ct {
	case "image/png":
		img, err = decodePNG(r.Body)
	case "image/jpeg":
		img, err = jpeg.Decode(bytes.NewReader(r.Body))
	case "image/webp":
		img, err = webp.Decode(bytes.NewReader(r.Body))
	default:
		t.Fatalf("not an image: status %d, Content-Type %q, body %.300s", r.Status, ct, r.Body)
	}
	if err != nil {
		t.Fatalf("decode %s: %v", ct, err)
	}
	return img
}

// SamePixels decodes two encoded images (PNG, JPEG or WebP) and reports
// whether they have the same size and the same pixels.
func SamePixels(t testing.TB, a, b []byte) bool {
	t.Helper()
	ia, _, err := image.Decode(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	ib, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if ia.Bounds() != ib.Bounds() {
		return false
	}
	for y := ia.Bounds().Min.Y; y < ia.Bounds().Max.Y; y++ {
		for x := ia.Bounds().Min.X; x < ia.Bounds().Max.X; x++ {
			r1, g1, b1, a1 := ia.At(x, y).RGBA()
			r2, g2, b2, a2 := ib.At(x, y).RGBA()
			if r1 != r2 || g1 != g2 || b1 != b2 || a1 != a2 {
				return false
			}
		}
	}
	return true
}

// Pixel returns the colour at x,y as 8-bit non-premultiplied RGBA.
func Pixel(img image.Image, x, y int) color.NRGBA {
	return color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
}

// Near reports whether two colours differ by at most tol in every channel.
func Near(a, b color.NRGBA, tol int) bool {
	d := func(x, y uint8) bool { return int(x)-int(y) <= tol && int(y)-int(x) <= tol }
	return d(a.R, b.R) && d(a.G, b.G) && d(a.B, b.B) && d(a.A, b.A)
}

// WantSize fails unless img is w×h.
func WantSize(t testing.TB, img image.Image, w, h int) {
	t.Helper()
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Fatalf("image is %dx%d, want %dx%d", b.Dx(), b.Dy(), w, h)
	}
}

// WantPixel fails unless the pixel at x,y is within tol of want.
func WantPixel(t testing.TB, img image.Image, x, y int, want color.NRGBA, tol int) {
	t.Helper()
	if got := Pixel(img, x, y); !Near(got, want, tol) {
		t.Fatalf("pixel (%d,%d) = %v, want %v (±%d); image %v, column %d from the top: %s",
			x, y, got, want, tol, img.Bounds(), x, columnRuns(img, x))
	}
}

// columnRuns describes column x of img as runs of one colour, top to
// bottom, so that a failed pixel check shows the layout it met.
func columnRuns(img image.Image, x int) string {
	b := img.Bounds()
	if x < b.Min.X || x >= b.Max.X {
		return "outside the image"
	}
	var out strings.Builder
	start := b.Min.Y
	for y := b.Min.Y + 1; y <= b.Max.Y; y++ {
		if y < b.Max.Y && Near(Pixel(img, x, y), Pixel(img, x, start), 8) {
			continue
		}
		if out.Len() > 400 {
			out.WriteString(" ...")
			break
		}
		fmt.Fprintf(&out, " %d-%d:%v", start, y-1, Pixel(img, x, start))
		start = y
	}
	return out.String()
}

// ResetServer listens on a loopback port, resets every connection at once
// (RST, not FIN) until the test ends, and returns its address.
func ResetServer(t testing.TB) string {
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
			_ = c.(*net.TCPConn).SetLinger(0)
			_ = c.Close()
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return ln.Addr().String()
}

// ClosedAddr returns a loopback address that refuses connections until
// the test ends. Its port is bound by a socket that never listens: a port
// merely closed again could be taken by a server of a test running at the
// same time, and answer.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	_, addr := loopbackSocket(t)
	return addr
}

// UnansweredAddr returns a loopback address whose connections neither
// succeed nor are refused until the test ends: its listener never
// accepts, and its queue of one connection is already taken, so the
// kernel drops every further SYN and a dial runs into its timeout.
func UnansweredAddr(t testing.TB) string {
	t.Helper()
	fd, addr := loopbackSocket(t)
	if err := unix.Listen(fd, 0); err != nil { // room for one connection
		t.Fatal(err)
	}
	// A listening socket's TCP_INFO gives its accept queue (Unacked) and
	// backlog (Sacked); the kernel drops SYNs once the queue passes it.
	for {
		info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		if err != nil {
			t.Fatal(err)
		}
		if info.Unacked > info.Sacked {
			return addr
		}
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatalf("filling %s's queue: %v", addr, err)
		}
		t.Cleanup(func() { c.Close() })
	}
}

// loopbackSocket is a TCP socket bound to a free loopback port, closed
// when the test ends, and its address.
func loopbackSocket(t testing.TB) (int, string) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fd, net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*unix.SockaddrInet4).Port))
}

// Metric reads one sample of base's Prometheus page; 0 when absent.
func Metric(t testing.TB, base, name string) float64 {
	t.Helper()
	body := Do(t, base, Request{Method: "GET", Path: "/metrics"}).Body
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` ([0-9.e+]+)$`).FindSubmatch(body)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}
