package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pictorhq/pictor/origin/chromiumtest"
)

// TestConsoleThroughServe: a person uses the console of a real `pictor
// serve` through its edge: signs in, previews a card as they type (no
// credit, the real renderer's pixels), creates it, and finds it in the
// images with a thumbnail the edge resized.
func TestConsoleThroughServe(t *testing.T) {
	s := startServe(t, t.TempDir(), nil)
	tab := chromiumtest.NewTab(t)
	ctx, cancel := context.WithTimeout(tab, 2*time.Minute)
	defer cancel()
	err := chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/console"),
		chromedp.WaitVisible(chromedp.CSS(`#api_id`)),
		chromedp.SendKeys(chromedp.CSS(`#api_id`), s.Owner.APIID),
		chromedp.SendKeys(chromedp.CSS(`#api_key`), s.Owner.APIKey),
		chromedp.Submit(chromedp.CSS(`#api_key`)),
		chromedp.WaitVisible(chromedp.CSS(`#credits-used`)),
		chromedp.Navigate(s.URL+"/console/new"),
		chromedp.WaitVisible(chromedp.CSS(`html[data-console-js] #new-html`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	// One change (both fields, then one input event) makes one preview;
	// it shows the real render: its size and its colour.
	type shown struct {
		Status        string
		Width, Height int
		Pixel         []int
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[shown](`new Promise((done, fail) => {
		const status = document.querySelector("#preview-status");
		const img = document.querySelector("#preview-image");
		new MutationObserver(async () => {
			if (status.textContent == "Rendering…") return;
			if (!status.textContent.startsWith("Rendered")) return done({Status: status.textContent, Width: 0, Height: 0, Pixel: []});
			await img.decode();
			const c = document.createElement("canvas");
			c.width = img.naturalWidth; c.height = img.naturalHeight;
			const g = c.getContext("2d");
			g.drawImage(img, 0, 0);
			done({Status: status.textContent, Width: img.naturalWidth, Height: img.naturalHeight, Pixel: [...g.getImageData(320, 160, 1, 1).data]});
		}).observe(status, {childList: true, characterData: true, subtree: true});
		document.querySelector("#opt-device_scale").value = "1";
		const html = document.querySelector("#new-html");
		html.value = '<div style="width:640px;height:320px;background:rgb(0,128,255)"></div>';
		html.dispatchEvent(new Event("input", {bubbles: true}));
	})`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if got.Width != 640 || got.Height != 320 || len(got.Pixel) != 4 || got.Pixel[0] > 8 || got.Pixel[1] < 120 || got.Pixel[1] > 136 || got.Pixel[2] < 247 {
		t.Fatalf("the preview: %+v", got)
	}
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#new-image button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#made-url`)),
		chromedp.Navigate(s.URL+"/console/images"),
		chromedp.WaitVisible(chromedp.CSS(`#images img`)),
	); err != nil {
		t.Fatal(err)
	}
	thumb, err := chromedp.Run(ctx, chromedp.Evaluate[int](`new Promise(done => {
		const img = document.querySelector("#images img");
		const size = () => done(img.naturalWidth);
		if (img.complete) size(); else img.addEventListener("load", size), img.addEventListener("error", size);
	})`, chromedp.EvalAwaitPromise))
	if err != nil || thumb != 320 {
		t.Errorf("the thumbnail is %d px wide (%v)", thumb, err)
	}
	// Previews used no credit: the one image did.
	if err := chromedp.Do(ctx, chromedp.Navigate(s.URL+"/console/overview")); err != nil {
		t.Fatal(err)
	}
	overview, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#credits-used`)))
	if err != nil || strings.TrimSpace(overview) != "1" {
		t.Errorf("credits used after previews and one image: %q (%v)", overview, err)
	}
}
