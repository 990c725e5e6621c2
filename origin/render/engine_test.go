package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pictorhq/pictor/origin/chromiumtest"
	"github.com/pictorhq/pictor/origin/egress"
)

// newEngine starts an engine for one test.
func newEngine(t testing.TB, configure ...func(*Config)) *Engine {
	t.Helper()
	gw, err := egress.New(egress.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Chromium = chromiumtest.Path()
	cfg.Gateway = gw
	cfg.AllowPrivate = true
	cfg.ProfileDir = t.TempDir()
	cfg.Tabs = 2
	for _, c := range configure {
		c(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := e.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
		if left := Processes(e.profiles); len(left) > 0 {
			t.Errorf("chromium processes left after Stop: %v", left)
		}
	})
	return e
}

func decodePNG(t *testing.T, data []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("decode PNG: %v", err)
	}
	return img
}

func rgba(img image.Image, x, y int) color.NRGBA {
	return color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
}

// TestIdleFor: an engine that never rendered has been idle for ever; one
// render in flight makes it busy; the idle time counts from the last
// render's end.
func TestIdleFor(t *testing.T) {
	e := newEngine(t)
	if idle := e.IdleFor(); idle < 24*time.Hour {
		t.Fatalf("a fresh engine idle for %v", idle)
	}
	// A page never ready keeps its render in flight for its whole max
	// wait (3 s): the test looks while it is.
	done := make(chan error, 1)
	go func() {
		_, err := e.Render(context.Background(), &Request{OrgID: "o1", HTML: `<p>never ready</p>`, WhenReady: true,
			MaxWait: 3 * time.Second, MaxWidth: 16384, MaxHeight: 16384})
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for e.IdleFor() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("IdleFor never reported the render in flight")
		}
		runtime.Gosched()
	}
	if err := <-done; !errors.Is(err, ErrNotReady) {
		t.Fatalf("the never-ready render: %v, want ErrNotReady", err)
	}
	// Idle time counted from the render's admission would be at least its
	// 3 s wait by now; from its end, a moment.
	first := e.IdleFor()
	if first <= 0 || first >= 1500*time.Millisecond {
		t.Errorf("IdleFor %v right after a 3 s render ended", first)
	}
	if second := e.IdleFor(); second < first {
		t.Errorf("IdleFor went back from %v to %v", first, second)
	}
}

func TestRenderSnippet(t *testing.T) {
	e := newEngine(t)
	res, err := e.Render(context.Background(), &Request{OrgID: "o1", HTML: `<div style="width:400px;height:200px;background:rgb(255,0,0)"></div>`, MaxWait: 5 * time.Second, MaxWidth: 16384, MaxHeight: 16384})
	if err != nil {
		t.Fatal(err)
	}
	img := decodePNG(t, res.Data)
	if b := img.Bounds(); b.Dx() != 800 || b.Dy() != 400 || res.Width != 800 || res.Height != 400 {
		t.Fatalf("size %v (reported %dx%d), want 800x400", b, res.Width, res.Height)
	}
	for _, p := range []image.Point{{0, 0}, {799, 399}, {400, 200}} {
		if c := rgba(img, p.X, p.Y); c != (color.NRGBA{255, 0, 0, 255}) {
			t.Fatalf("pixel %v = %v, want red", p, c)
		}
	}
}

// boxPage is a test page: script runs as the page is parsed and sets ok,
// and the 100×50 box at the page's top left turns green when ok is true,
// red when it is not.
func boxPage(script string) string {
	return "<script>\n" + script + `
document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("box").style.background = ok ? "rgb(0,128,0)" : "rgb(255,0,0)";
});
</script><div id="box" style="width:100px;height:50px;background:rgb(0,0,255)"></div>`
}

var boxGreen = color.NRGBA{0, 128, 0, 255}

// renderBox renders a boxPage as render i of a test, which must end within
// 20 s, and returns the box's colour.
func renderBox(t *testing.T, e *Engine, i int, page string) color.NRGBA {
	t.Helper()
	return renderBoxOf(t, e, i, &Request{HTML: page})
}

// renderBoxOf is renderBox for a request of the test's own: organization
// "o", device scale 1, max_wait 5 s and no output limit unless it says
// otherwise.
func renderBoxOf(t *testing.T, e *Engine, i int, r *Request) color.NRGBA {
	t.Helper()
	if r.OrgID == "" {
		r.OrgID = "o"
	}
	if r.DeviceScale == 0 {
		r.DeviceScale = 1
	}
	if r.MaxWait == 0 {
		r.MaxWait = 5 * time.Second
	}
	if r.MaxWidth == 0 && r.MaxHeight == 0 {
		r.MaxWidth, r.MaxHeight = 16384, 16384
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := e.Render(ctx, r)
	if err != nil {
		t.Fatalf("render %d: %v", i, err)
	}
	return rgba(decodePNG(t, res.Data), 50, 25)
}

// TestDialogsAnswered: alert, confirm, prompt and beforeunload do not hold
// a render: each is accepted as a user pressing OK would, and the page goes
// on (confirm returned true, prompt its default text). The tab is reused
// by the next render, which leaves the page with the beforeunload handler.
func TestDialogsAnswered(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Tabs = 1 })
	page := boxPage(`alert("hello");
const ok = confirm("sure?") && prompt("name?", "pictor") === "pictor";
onbeforeunload = e => { e.preventDefault(); return "stay"; };`)
	for i := range 2 {
		if c := renderBox(t, e, i, page); c != boxGreen {
			t.Fatalf("render %d: box is %v, want green (dialogs answered OK)", i, c)
		}
	}
}

// TestAutoCropBeyondViewport crops snippets larger than the default
// 1920×1080 viewport to their whole content, the part outside the viewport
// included.
func TestAutoCropBeyondViewport(t *testing.T) {
	e := newEngine(t)
	red, blue := color.NRGBA{255, 0, 0, 255}, color.NRGBA{0, 0, 255, 255}
	box := func(w, h int) string {
		return fmt.Sprintf(`<div style="position:relative;width:%dpx;height:%dpx;background:rgb(255,0,0)">`+
			`<div style="position:absolute;right:0;bottom:0;width:40px;height:40px;background:rgb(0,0,255)"></div></div>`, w, h)
	}
	tests := []struct {
		name  string
		w, h  int
		scale float64
	}{
		{"wider", 2300, 300, 1},
		{"taller", 300, 1500, 1},
		{"both at scale 2", 2000, 1100, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := e.Render(context.Background(), &Request{OrgID: "o", HTML: box(tc.w, tc.h), DeviceScale: tc.scale,
				MaxWait: 5 * time.Second, MaxWidth: 16384, MaxHeight: 16384})
			if err != nil {
				t.Fatal(err)
			}
			img := decodePNG(t, res.Data)
			w, h := int(float64(tc.w)*tc.scale), int(float64(tc.h)*tc.scale)
			if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
				t.Fatalf("size %v, want %dx%d", b, w, h)
			}
			s := int(tc.scale)
			for _, p := range []struct {
				x, y int
				want color.NRGBA
			}{{2, 2, red}, {w - 50*s, h - 50*s, red}, {w - 20*s, h - 20*s, blue}, {w - 1, h - 1, blue}} {
				if c := rgba(img, p.x, p.y); c != p.want {
					t.Errorf("pixel (%d,%d) = %v, want %v", p.x, p.y, c, p.want)
				}
			}
		})
	}
}

// TestPageNavigatingDuringSteps renders a page that, once loaded, starts an
// image that never finishes (so the steps wait for it) and then replaces
// itself: the steps start again on the new document, which is captured.
func TestPageNavigatingDuringSteps(t *testing.T) {
	release := make(chan struct{})
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hang":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case "/a":
			fmt.Fprint(w, `<!DOCTYPE html><html><body style="margin:0;background:rgb(255,0,0)"><script>
addEventListener('load', () => {
  const i = new Image(); i.src = '/hang'; document.body.appendChild(i);
  setTimeout(() => { location.href = '/b'; }, 300);
});</script></body></html>`)
		case "/b":
			fmt.Fprint(w, `<!DOCTYPE html><html><body style="margin:0;background:rgb(0,128,0)"></body></html>`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(func() { close(release); site.Close() })
	e := newEngine(t)
	res, err := e.Render(context.Background(), &Request{OrgID: "o", URL: site.URL + "/a", ViewportWidth: 100, ViewportHeight: 100,
		MaxWait: 10 * time.Second, MaxWidth: 16384, MaxHeight: 16384})
	if err != nil {
		t.Fatal(err)
	}
	if c := rgba(decodePNG(t, res.Data), 50, 50); c != (color.NRGBA{0, 128, 0, 255}) {
		t.Fatalf("pixel = %v, want the second document's green", c)
	}
}

// TestSiteThatNeverAnswers: a URL whose server accepts the request and
// sends nothing fails the render with ErrTimeout once max_wait_ms is spent,
// long before the render's own deadline (the caller here gives up at 20 s,
// the engine at 60 s), and the next render works.
func TestSiteThatNeverAnswers(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" {
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<div style="width:100px;height:50px;background:red"></div>`))
	}))
	defer site.Close()
	e := newEngine(t, func(c *Config) { c.Tabs = 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	_, err := e.Render(ctx, &Request{OrgID: "o", URL: site.URL + "/hang", MaxWait: time.Second, MaxWidth: 16384, MaxHeight: 16384})
	cancel()
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("render of a silent site: %v, want ErrTimeout", err)
	}
	if _, err := e.Render(context.Background(), &Request{OrgID: "o", URL: site.URL + "/", MaxWait: 5 * time.Second, MaxWidth: 16384, MaxHeight: 16384}); err != nil {
		t.Fatalf("next render: %v", err)
	}
}

// TestFormSubmittingItselfToAnotherSite renders HTML whose form posts
// itself, as the document is written, to another site: the render captures
// the page the form was answered with. The headless shell draws that page
// in another renderer: a capture begun on the written document never gets
// a frame, and DevTools answers calls made during the swap "Not attached
// to an active page". Both are the page navigating, not a failed browser
// or a capture to wait for. The render is repeated because the steps meet
// the swap at different points each time.
func TestFormSubmittingItselfToAnotherSite(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.FormValue("q") != "1" {
			http.Error(w, "want the form's POST", http.StatusBadRequest)
			return
		}
		fmt.Fprint(w, `<!DOCTYPE html><html><body style="margin:0;background:rgb(0,128,0)"></body></html>`)
	}))
	t.Cleanup(site.Close)
	reg := prometheus.NewRegistry()
	e := newEngine(t, metered(reg, func(c *Config) { c.Tabs = 1 }))
	html := `<body style="margin:0;background:rgb(255,0,0)"><form id="f" method="post" action="` + site.URL + `/answer">` +
		`<input type="hidden" name="q" value="1"></form><script>document.getElementById("f").submit()</script></body>`
	for i := range 12 {
		res, err := e.Render(context.Background(), &Request{OrgID: "o", HTML: html, ViewportWidth: 100, ViewportHeight: 100,
			MaxWait: 10 * time.Second, MaxWidth: 16384, MaxHeight: 16384})
		if err != nil {
			t.Fatalf("render %d: %v", i, err)
		}
		if c := rgba(decodePNG(t, res.Data), 50, 50); c != (color.NRGBA{0, 128, 0, 255}) {
			t.Fatalf("render %d: pixel = %v, want the answer's green", i, c)
		}
	}
	if got := metric(t, reg, "pictor_render_retries_total"); got != 0 {
		t.Errorf("%v renders were tried again as if the browser had failed", got)
	}
	if got := metric(t, reg, "pictor_render_capture_stalls_total"); got != 0 {
		t.Errorf("%v captures waited for a frame of the document the form left", got)
	}
}
