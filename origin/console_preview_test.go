package origin_test

import (
	"context"
	"encoding/json"
	"image"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pictorhq/pictor/origin"
	"github.com/pictorhq/pictor/origin/chromiumtest"
	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// previewImage decodes a console preview's image.
func previewImage(t *testing.T, a consoleAnswer) image.Image {
	t.Helper()
	if a.status != http.StatusOK || !strings.HasPrefix(a.header.Get("Content-Type"), "image/") || !strings.Contains(a.header.Get("Server-Timing"), "render;dur=") {
		t.Fatalf("preview: %d %s %q\n%.300s", a.status, a.header.Get("Content-Type"), a.header.Get("Server-Timing"), a.body)
	}
	img, _, err := image.Decode(strings.NewReader(a.body))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// TestConsolePreview: the new-image form and the template editor preview
// through POST /v1/image/preview as the signed-in key: real pixels, the
// REST route's refusals by field, the organization's allowance, nothing
// stored and no credit; a form without its token is refused.
func TestConsolePreview(t *testing.T) {
	o := startOrigin(t, func(c *origin.Config) { c.PreviewsPerMinute = 4 })
	c := &consoleClient{t: t, base: o.URL}
	c.signIn(o.Owner)
	page := c.send("GET", "/console/new", nil)
	csrf := csrfOf(t, page.body)
	if !strings.Contains(page.body, `data-preview="/console/new/preview"`) || !strings.Contains(page.body, "4 a minute") {
		t.Fatalf("the new-image page has no live preview:\n%s", page.body)
	}

	img := previewImage(t, c.send("POST", "/console/new/preview", url.Values{"csrf": {csrf},
		"html": {`<body style="margin:0;background:rgb(255,0,0)"></body>`}, "viewport_width": {"120"}, "viewport_height": {"60"}, "device_scale": {"1"}}))
	if b := img.Bounds(); b.Dx() != 120 || b.Dy() != 60 {
		t.Errorf("preview size %v", b)
	}
	apitest.WantPixel(t, img, 60, 30, colorOf([4]uint8{255, 0, 0, 255}), 3)

	// The template editor's draft, with its values; a value's field wins
	// over the JSON it differs from.
	tpl := url.Values{"csrf": {csrf}, "name": {"Card"}, "html": {`<body style="margin:0;background:{{color}}"></body>`},
		"viewport_width": {"80"}, "viewport_height": {"40"}, "device_scale": {"1"}, "template_values": {`{"color":"rgb(0,0,255)"}`}}
	apitest.WantPixel(t, previewImage(t, c.send("POST", "/console/templates/preview", tpl)), 40, 20, colorOf([4]uint8{0, 0, 255, 255}), 3)
	tpl.Set("value.color", "rgb(0,128,0)")
	apitest.WantPixel(t, previewImage(t, c.send("POST", "/console/templates/preview", tpl)), 40, 20, colorOf([4]uint8{0, 128, 0, 255}), 3)

	// A refusal is the REST route's, by field.
	bad := c.send("POST", "/console/new/preview", url.Values{"csrf": {csrf}, "html": {"<p>x</p>"}, "viewport_width": {"100"}})
	var refusal struct {
		Message string
		Fields  []struct{ Path string } `json:"validation_errors"`
	}
	if json.Unmarshal([]byte(bad.body), &refusal) != nil || bad.status != 400 || len(refusal.Fields) == 0 || refusal.Fields[0].Path != "viewport_height" {
		t.Errorf("a viewport without its height: %d %s", bad.status, bad.body)
	}
	// The fifth preview of the minute (the refused one counted) is refused.
	limited := c.send("POST", "/console/new/preview", url.Values{"csrf": {csrf}, "html": {"<p>x</p>"}})
	if limited.status != http.StatusTooManyRequests || limited.header.Get("Retry-After") == "" || !strings.Contains(limited.body, `"statusCode":429`) {
		t.Errorf("past the allowance: %d %q %s", limited.status, limited.header.Get("Retry-After"), limited.body)
	}
	if forged := c.send("POST", "/console/new/preview", url.Values{"html": {"<p>x</p>"}}); forged.status != http.StatusForbidden {
		t.Errorf("a preview without the form's token: %d", forged.status)
	}

	// Nothing was stored or charged.
	var list struct{ Images []any }
	r := o.do(t, apitest.Request{Method: "GET", Path: "/v1/images", Creds: &o.Owner})
	apitest.WantStatus(t, r, 200)
	r.Decode(t, &list)
	if len(list.Images) != 0 {
		t.Errorf("previews stored %d images", len(list.Images))
	}
	if ov := c.send("GET", "/console/overview", nil); !strings.Contains(ov.body, `id="credits-used">0<`) {
		t.Errorf("previews used credits:\n%s", ov.body)
	}
}

// TestConsolePreviewNewerCancelsOlder: a page's newer preview stops its
// older one still rendering, which frees the one renderer for it; an
// older one arriving late is refused and stops nothing.
// The edge does not pass a browser's abort on, so the console does.
func TestConsolePreviewNewerCancelsOlder(t *testing.T) {
	// One tab and a render timeout far beyond the test's: only the
	// cancellation frees the tab for the newer preview.
	o := startOrigin(t, func(c *origin.Config) { c.Render.Tabs, c.Render.Timeout = 1, 10*time.Minute })
	arrived := make(chan struct{}, 1)
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		<-r.Context().Done() // never answers
	}))
	t.Cleanup(hang.Close)
	c := &consoleClient{t: t, base: o.URL}
	c.signIn(o.Owner)
	csrf := csrfOf(t, c.send("GET", "/console/new", nil).body)

	canceled := apitest.Metric(t, o.URL, `pictor_render_total{outcome="canceled"}`)
	older := make(chan int, 1)
	go func() {
		form := url.Values{"csrf": {csrf}, "url": {hang.URL + "/slow"}, "max_wait_ms": {"10000"}, "preview_page": {"p1"}, "preview_seq": {"2"}}
		req, _ := http.NewRequest("POST", o.URL+"/console/new/preview", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(c.cookie)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			older <- 0
			return
		}
		resp.Body.Close()
		older <- resp.StatusCode
	}()
	select {
	case <-arrived: // Chromium is loading the older preview's page
	case status := <-older:
		t.Fatalf("the older preview ended before its page was asked for: %d", status)
	}
	// The page numbers its previews: one numbered before the preview in
	// flight, arriving after it (requests may arrive out of order), is
	// stale and cancels nothing.
	if stale := c.send("POST", "/console/new/preview", url.Values{"csrf": {csrf}, "html": {"<p>x</p>"}, "preview_page": {"p1"}, "preview_seq": {"1"}}); stale.status != http.StatusConflict {
		t.Errorf("a stale preview: %d %s", stale.status, stale.body)
	}
	select {
	case status := <-older:
		t.Fatalf("a stale preview ended the newer one: %d", status)
	default:
	}
	img := previewImage(t, c.send("POST", "/console/new/preview", url.Values{"csrf": {csrf},
		"html": {`<body style="margin:0;background:rgb(0,0,255)"></body>`}, "viewport_width": {"50"}, "viewport_height": {"50"}, "device_scale": {"1"}, "preview_page": {"p1"}, "preview_seq": {"3"}}))
	apitest.WantPixel(t, img, 25, 25, colorOf([4]uint8{0, 0, 255, 255}), 3)
	if status := <-older; status == http.StatusOK || status == 0 {
		t.Errorf("the older preview answered %d", status)
	}
	// Its render was canceled, rather than ending at its max_wait_ms (the
	// count may land just after the answer).
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(time.Minute); apitest.Metric(t, o.URL, `pictor_render_total{outcome="canceled"}`) != canceled+1; <-tick.C {
		if time.Now().After(deadline) {
			t.Fatalf("the older preview's render was not canceled: %v canceled renders", apitest.Metric(t, o.URL, `pictor_render_total{outcome="canceled"}`))
		}
	}
}

// TestConsoleTemplatePreviewInABrowser: editing a template's values in
// the editor changes the live preview's pixels, after the debounce, with
// the render time shown.
func TestConsoleTemplatePreviewInABrowser(t *testing.T) {
	o := startOrigin(t)
	var made struct {
		TemplateID string `json:"template_id"`
	}
	r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/template", Creds: &o.Owner, JSON: map[string]any{"name": "Swatch",
		"html": `<div style="width:200px;height:100px;background:{{color}}"></div>`, "css": "body{margin:0}", "device_scale": 1}})
	apitest.WantStatus(t, r, http.StatusCreated)
	r.Decode(t, &made)
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
		chromedp.Navigate(o.URL+"/console/templates/"+made.TemplateID),
		chromedp.WaitVisible(chromedp.CSS(`html[data-console-js] #template-values`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	// The editor previews itself once on load; wait for that, then each
	// change: a result counts once the change's "Rendering…" was seen.
	const settle = `new Promise(done => {
		const status = document.querySelector("#preview-status");
		const finished = () => status.textContent != "Rendering…" && !status.textContent.startsWith("The preview shows");
		if (finished()) return done(status.textContent);
		new MutationObserver((_, obs) => { if (finished()) { obs.disconnect(); done(status.textContent); } })
			.observe(status, {childList: true, characterData: true, subtree: true});
	})`
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[string](settle, chromedp.EvalAwaitPromise)); err != nil {
		t.Fatal(err)
	}
	type shown struct {
		Status string
		Pixel  []int
	}
	change := func(values string) shown {
		t.Helper()
		literal, _ := json.Marshal(values) // a JSON string is a JavaScript string literal
		s, err := chromedp.Run(ctx, chromedp.Evaluate[shown](`new Promise(done => {
			const status = document.querySelector("#preview-status");
			const img = document.querySelector("#preview-image");
			let started = false;
			new MutationObserver(async (_, obs) => {
				if (status.textContent == "Rendering…") { started = true; return; }
				if (!started) return;
				obs.disconnect();
				if (!status.textContent.startsWith("Rendered")) return done({Status: status.textContent, Pixel: []});
				await img.decode();
				const c = document.createElement("canvas");
				c.width = img.naturalWidth; c.height = img.naturalHeight;
				const g = c.getContext("2d");
				g.drawImage(img, 0, 0);
				done({Status: status.textContent, Pixel: [...g.getImageData(100, 50, 1, 1).data]});
			}).observe(status, {childList: true, characterData: true, subtree: true});
			const json = document.querySelector("#template-values");
			json.value = `+string(literal)+`;
			json.dispatchEvent(new Event("input", {bubbles: true}));
		})`, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	red := change(`{"color": "rgb(255, 0, 0)"}`)
	blue := change(`{"color": "rgb(0, 0, 255)"}`)
	if !strings.HasPrefix(red.Status, "Rendered in ") || len(red.Pixel) != 4 || red.Pixel[0] < 247 || red.Pixel[2] > 8 {
		t.Errorf("red: %+v", red)
	}
	if !strings.HasPrefix(blue.Status, "Rendered in ") || len(blue.Pixel) != 4 || blue.Pixel[2] < 247 || blue.Pixel[0] > 8 {
		t.Errorf("blue: %+v", blue)
	}

	// Typing is debounced: a burst of changes sends one preview. A newer
	// preview aborts the one in flight: two at once leave the first
	// aborted and the second shown.
	type sent struct {
		Fetches int
		Aborted []bool
		Status  string
	}
	burst, err := chromedp.Run(ctx, chromedp.Evaluate[sent](`new Promise(done => {
		const signals = [];
		const fetch0 = window.fetch;
		window.fetch = (url, init) => { signals.push(init.signal); return fetch0(url, init); };
		const status = document.querySelector("#preview-status");
		let started = false;
		new MutationObserver((_, obs) => {
			if (status.textContent == "Rendering…") { started = true; return; }
			if (!started) return;
			obs.disconnect();
			window.fetch = fetch0;
			done({Fetches: signals.length, Aborted: signals.map(s => s.aborted), Status: status.textContent});
		}).observe(status, {childList: true, characterData: true, subtree: true});
		const json = document.querySelector("#template-values");
		for (const c of ["rgb(1, 1, 1)", "rgb(2, 2, 2)", "rgb(3, 3, 3)", "rgb(0, 128, 0)"]) {
			json.value = JSON.stringify({color: c});
			json.dispatchEvent(new Event("input", {bubbles: true}));
		}
	})`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if burst.Fetches != 1 || !strings.HasPrefix(burst.Status, "Rendered in ") {
		t.Errorf("a burst of four changes: %+v, want one preview", burst)
	}
	both, err := chromedp.Run(ctx, chromedp.Evaluate[sent](`new Promise(done => {
		const signals = [];
		const fetch0 = window.fetch;
		window.fetch = (url, init) => { signals.push(init.signal); return fetch0(url, init); };
		const status = document.querySelector("#preview-status");
		new MutationObserver((_, obs) => {
			if (status.textContent == "Rendering…" || signals.length < 2) return;
			obs.disconnect();
			window.fetch = fetch0;
			done({Fetches: signals.length, Aborted: signals.map(s => s.aborted), Status: status.textContent});
		}).observe(status, {childList: true, characterData: true, subtree: true});
		const now = document.querySelector("[data-preview-now]");
		now.click();
		now.click();
	})`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if both.Fetches != 2 || !both.Aborted[0] || both.Aborted[1] || !strings.HasPrefix(both.Status, "Rendered in ") {
		t.Errorf("two previews at once: %+v, want the first aborted and the second shown", both)
	}
	// The window, not the whole page: the editor beside its preview.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1024, 900), chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`)); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shotsDir(t), "template-preview-light-1024.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
