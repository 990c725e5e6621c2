package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pictorhq/pictor/origin/chromiumtest"
	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// TestConsoleThroughServe: a person uses the console of a real `pictor
// serve` through its edge: signs in, previews a card as they type (no
// credit, the real renderer's pixels), creates it, and finds it in the
// images with a thumbnail the edge resized.
func TestConsoleThroughServe(t *testing.T) {
	s := startServe(t, t.TempDir(), nil)
	tab := chromiumtest.NewTab(t)
	ctx, cancel := context.WithTimeout(tab, 3*time.Minute)
	defer cancel()
	// Wrong credentials get the form again with one message.
	err := chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/console"),
		chromedp.WaitVisible(chromedp.CSS(`#api_id`)),
		chromedp.SendKeys(chromedp.CSS(`#api_id`), s.Owner.APIID),
		chromedp.SendKeys(chromedp.CSS(`#api_key`), "not-the-key"),
		chromedp.Submit(chromedp.CSS(`#api_key`)),
		chromedp.WaitVisible(chromedp.CSS(`#signin-error`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	wrong, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#signin-error`)))
	if err != nil || !strings.Contains(wrong, "do not open the console") {
		t.Fatalf("a wrong key: %q (%v)", wrong, err)
	}
	err = chromedp.Do(ctx,
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

	// Open the image from the list and delete it (the confirmation
	// accepted): its URL answers 404 through the edge.
	if err := chromedp.Do(ctx, chromedp.Navigate(s.URL+"/console/images"), chromedp.WaitVisible(chromedp.CSS(`#images a`))); err != nil {
		t.Fatal(err)
	}
	imageURL, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#images img").src.split("?")[0]`))
	if err != nil {
		t.Fatal(err)
	}
	apitest.WantStatus(t, s.do(t, apitest.Request{Method: "GET", Path: strings.TrimPrefix(imageURL, s.URL)}), 200)
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#images a`)),
		chromedp.WaitVisible(chromedp.CSS(`#delete-image`)),
		chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`),
		chromedp.Click(chromedp.CSS(`#delete-image`)),
		chromedp.WaitVisible(chromedp.CSS(`#no-images`)),
	); err != nil {
		t.Fatalf("delete: %v", err)
	}
	apitest.WantStatus(t, s.do(t, apitest.Request{Method: "GET", Path: strings.TrimPrefix(imageURL, s.URL)}), 404)

	// Create a key with one permission; its secret, shown once, works
	// over REST with that permission only.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/console/keys"),
		chromedp.WaitVisible(chromedp.CSS(`#key-name`)),
		chromedp.SendKeys(chromedp.CSS(`#key-name`), "viewer"),
		chromedp.Click(chromedp.CSS(`input[name=permission][value="images:read"]`)),
		chromedp.Submit(chromedp.CSS(`#key-name`)),
		chromedp.WaitVisible(chromedp.CSS(`#created-api-key`)),
	); err != nil {
		t.Fatalf("create a key: %v", err)
	}
	type created struct{ APIID, APIKey string }
	k, err := chromedp.Run(ctx, chromedp.Evaluate[created](`({APIID: document.querySelector("#created-api-id").textContent, APIKey: document.querySelector("#created-api-key").textContent})`))
	if err != nil {
		t.Fatal(err)
	}
	viewer := apitest.Creds{APIID: k.APIID, APIKey: k.APIKey}
	apitest.WantStatus(t, s.do(t, apitest.Request{Method: "GET", Path: "/v1/images", Creds: &viewer}), 200)
	apitest.WantStatus(t, s.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &viewer}), 403)

	// Signed in with that key, the session ends once the key is disabled.
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`.signout button`)),
		chromedp.WaitVisible(chromedp.CSS(`#api_key`)),
		chromedp.SendKeys(chromedp.CSS(`#api_id`), viewer.APIID),
		chromedp.SendKeys(chromedp.CSS(`#api_key`), viewer.APIKey),
		chromedp.Submit(chromedp.CSS(`#api_key`)),
		chromedp.WaitVisible(chromedp.CSS(`.signout`)),
		chromedp.Navigate(s.URL+"/console/images"),
		chromedp.WaitVisible(chromedp.CSS(`#no-images`)),
	); err != nil {
		t.Fatalf("sign in with the new key: %v", err)
	}
	var keys struct {
		Data []struct {
			ID    string `json:"id"`
			APIID string `json:"api_id"`
		} `json:"data"`
	}
	r := s.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys?count=100", Creds: &s.Owner})
	apitest.WantStatus(t, r, 200)
	r.Decode(t, &keys)
	for _, key := range keys.Data {
		if key.APIID == viewer.APIID {
			apitest.WantStatus(t, s.do(t, apitest.Request{Method: "DELETE", Path: "/v1/api-keys/" + key.ID, Creds: &s.Owner}), 204)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(s.URL+"/console/images"), chromedp.WaitVisible(chromedp.CSS(`#api_key`))); err != nil {
		t.Fatalf("the disabled key's session: %v", err)
	}
}
