package origin_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/pictorhq/pictor/origin"
	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// rendersOK reads pictor_render_total{outcome="ok"} from /metrics.
func (o *testOrigin) rendersOK(t *testing.T) int {
	t.Helper()
	body := o.get(t, "/metrics").Body
	m := regexp.MustCompile(`(?m)^pictor_render_total\{outcome="ok"\} (\d+)$`).FindSubmatch(body)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// TestOneRenderPerImage fires many GETs at an image as soon as it exists:
// they all wait for the same render, and get the same bytes.
func TestOneRenderPerImage(t *testing.T) {
	o := startOrigin(t)
	before := o.rendersOK(t)
	_, u := o.create(t, o.Owner, map[string]any{"html": redBox, "ms_delay": 300})
	var wg sync.WaitGroup
	bodies := make([][]byte, 12)
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := apitest.Send(o.URL, apitest.Request{Method: "GET", Path: u[len(o.URL):]})
			if err == nil && r.Status == 200 {
				bodies[i] = r.Body
			}
		}()
	}
	wg.Wait()
	for i, b := range bodies {
		// Bytes may differ once the stored master is recompressed; the
		// image may not.
		if len(b) == 0 {
			t.Fatalf("GET %d failed", i)
		}
		img := apitest.DecodeImage(t, &apitest.Response{Status: 200, Header: http.Header{"Content-Type": {"image/png"}}, Body: b})
		apitest.WantSize(t, img, 800, 400)
		apitest.WantPixel(t, img, 400, 200, red, 0)
	}
	if got := o.rendersOK(t) - before; got != 1 {
		t.Fatalf("%d renders for one image, want exactly 1", got)
	}
	// Conversions are made once too.
	o.get(t, u+".jpg")
	o.get(t, u+".jpg")
	if got := o.rendersOK(t) - before; got != 1 {
		t.Fatalf("a conversion rendered again: %d renders", got)
	}
}

// TestQueueFullAnswers503 holds the only tab with a slow render and a zero
// queue: the next render is refused at once with 503 and Retry-After.
func TestQueueFullAnswers503(t *testing.T) {
	o := startOrigin(t, func(c *origin.Config) { c.Render.Tabs, c.Render.Queue = 1, 0 })
	loaded := make(chan struct{})
	var once sync.Once
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(loaded) })
		select { // hold the render until the test is done with the second one
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	_, first := o.create(t, o.Owner, map[string]any{"html": `<img src="` + slow.URL + `/pixel.png">`, "max_wait_ms": 10000})
	<-loaded // the first render holds the tab now

	_, second := o.create(t, o.Owner, map[string]any{"html": redBox})
	r := o.get(t, second)
	apitest.WantError(t, r, http.StatusServiceUnavailable)
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
	close(release)
	apitest.WantStatus(t, o.get(t, first), 200)
	// Once the tab is free, the refused image renders: the 503 was not recorded.
	apitest.WantSize(t, apitest.DecodeImage(t, o.get(t, second)), 800, 400)
}

// TestBatchDoesNotCrowdOutOthers: the renders a batch starts in the
// background wait in the image service, not in the render queue, so one
// organization's batch of slow pages cannot fill the queue and turn
// another organization's GET into a 503: the GET waits for the render in
// progress (held until its max_wait_ms) and is served next.
func TestBatchDoesNotCrowdOutOthers(t *testing.T) {
	o := startOrigin(t, func(c *origin.Config) { c.Render.Tabs, c.Render.Queue = 1, 4 })
	loaded := make(chan struct{})
	var once sync.Once
	release := make(chan struct{})
	defer close(release)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(loaded) })
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	var variations []map[string]any
	for i := range 10 {
		variations = append(variations, map[string]any{"html": fmt.Sprintf(`<img src="%s/%d.png">`, slow.URL, i)})
	}
	apitest.WantStatus(t, o.batch(t, o.Owner, map[string]any{"default_options": map[string]any{"max_wait_ms": 2000}, "variations": variations}), 200)
	<-loaded // a batch render holds the tab

	_, other := o.newOrg(t.Context(), t, "pro")
	_, u := o.create(t, other, map[string]any{"html": redBox})
	apitest.WantSize(t, apitest.DecodeImage(t, o.get(t, u)), 800, 400)
}
