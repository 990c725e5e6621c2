package render

import (
	"context"
	"fmt"
	"image/color"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// frameWaits reads pictor_render_frame_waits_total by outcome.
func frameWaits(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "pictor_render_frame_waits_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" {
					got[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return got
}

// isolatedEngine is an engine of one tab with site isolation, on the
// browser the engine picks for it unless $PICTOR_CHROMIUM names one; more
// changes the rest.
func isolatedEngine(t *testing.T, reg *prometheus.Registry, more ...func(*Config)) *Engine {
	return newEngine(t, append([]func(*Config){metered(reg, func(c *Config) {
		c.Tabs = 1
		c.SiteIsolation = true
		if os.Getenv("PICTOR_CHROMIUM") == "" {
			c.Chromium = ""
		}
	})}, more...)...)
}

// serveSites serves the handler made for the port on every loopback
// address (127.0.0.2 and localhost are other sites than 127.0.0.1) until
// the test ends, and returns the port.
func serveSites(t *testing.T, handler func(port int) http.Handler) int {
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler(ln.Addr().(*net.TCPAddr).Port)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// TestCrossSiteFramesDrawn: with site isolation, the capture waits until
// each cross-site frame that shows has drawn what it holds. The visible
// frame turns green as it loads, then keeps its renderer busy for 1.5 s,
// so it draws the green only after that: a capture that did not wait for
// it shows the white it drew before (as CI once got, under load, from a
// frame that had not drawn yet). Frames that draw nothing are not waited
// for: one with display:none, one with visibility:hidden and the frame
// inside it, and one below the viewport. A wait for any of them would end
// only at its bound, as a timeout.
func TestCrossSiteFramesDrawn(t *testing.T) {
	var at func(host, path string) string
	serveSites(t, func(port int) http.Handler {
		at = func(host, path string) string { return fmt.Sprintf("http://%s:%d%s", host, port, path) }
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			switch r.URL.Path {
			case "/top":
				fmt.Fprintf(w, `<body style="margin:0">`+
					`<iframe src="%s" style="display:block;border:0;width:300px;height:200px"></iframe>`+
					`<iframe src="%s" style="display:none"></iframe>`+
					`<iframe src="%s" style="visibility:hidden"></iframe>`+
					`<iframe src="%s" style="position:absolute;top:5000px"></iframe>`,
					at("127.0.0.2", "/busy"), at("127.0.0.3", "/plain"), at("127.0.0.4", "/outer"), at("127.0.0.5", "/plain"))
			case "/busy":
				fmt.Fprint(w, `<body style="margin:0"><script>addEventListener("load", () => {
					document.body.style.background = "rgb(0,128,0)";
					setTimeout(() => { const end = performance.now() + 1500; while (performance.now() < end); });
				})</script>`)
			case "/outer":
				fmt.Fprintf(w, `<body><iframe src="%s"></iframe>`, at("localhost", "/plain"))
			default:
				fmt.Fprint(w, `<body style="background:rgb(0,0,255)">`)
			}
		})
	})

	reg := prometheus.NewRegistry()
	e := isolatedEngine(t, reg)
	res, err := e.Render(context.Background(), &Request{OrgID: "o", URL: at("127.0.0.1", "/top"), MaxWait: 10 * time.Second,
		ViewportWidth: 800, ViewportHeight: 600, MaxWidth: 16384, MaxHeight: 16384})
	if err != nil {
		t.Fatal(err)
	}
	img := decodePNG(t, res.Data)
	if c := rgba(img, 150, 100); c != boxGreen {
		t.Errorf("pixel in the busy frame %v, want its green", c)
	}
	if c := rgba(img, 500, 100); c != (color.NRGBA{255, 255, 255, 255}) {
		t.Errorf("pixel beside the frame %v, want the page's white", c)
	}
	got := frameWaits(t, reg)
	t.Logf("frame waits: %v", got)
	if got[frameDrawn] < 1 || got[frameHidden] != 3 || got[frameDrawn]+got[frameOffscreen] != 2 ||
		got[frameTimedOut] != 0 || got[frameGone] != 0 {
		t.Errorf("frame waits %v, want the busy frame drawn, 3 hidden, the one below the viewport "+
			"offscreen (or drawn, if Chromium had not stopped drawing it yet), none timed out or gone", got)
	}
}

// TestCrossSiteFrameThatNeverDraws: a cross-site frame whose script never
// yields holds the capture for the busy limit at most; then the page is
// captured as it is, and the next render on the tab works.
func TestCrossSiteFrameThatNeverDraws(t *testing.T) {
	port := serveSites(t, func(port int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			switch r.URL.Path {
			case "/top":
				fmt.Fprintf(w, `<body style="margin:0;background:rgb(0,128,0)"><iframe src="http://127.0.0.2:%d/stuck"></iframe>`, port)
			case "/stuck":
				fmt.Fprint(w, `<script>addEventListener("load", () => setTimeout(() => { for (;;); }))</script>`)
			}
		})
	})

	reg := prometheus.NewRegistry()
	e := isolatedEngine(t, reg, func(c *Config) { c.BusyLimit = time.Second })
	for i := range 2 {
		res, err := e.Render(context.Background(), &Request{OrgID: "o", URL: fmt.Sprintf("http://127.0.0.1:%d/top", port),
			MaxWait: 10 * time.Second, ViewportWidth: 400, ViewportHeight: 300, MaxWidth: 16384, MaxHeight: 16384})
		if err != nil {
			t.Fatalf("render %d: %v", i, err)
		}
		if c := rgba(decodePNG(t, res.Data), 350, 250); c != boxGreen {
			t.Errorf("render %d: pixel beside the frame %v, want the page's green", i, c)
		}
	}
	if got := frameWaits(t, reg); got[frameTimedOut] != 2 || len(got) != 1 {
		t.Errorf("frame waits %v, want the stuck frame timed out in each render", got)
	}
}
