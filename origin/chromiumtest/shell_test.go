package chromiumtest

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// card is a social card: a dithered gradient, a blurred shadow, rounded
// corners, bold text in a named font, a colour emoji.
const card = `<!DOCTYPE html><html><body style="margin:0">
<div style="width:1200px;height:630px;background:linear-gradient(135deg,#1e3c72,#2a5298 40%,#e96443);display:flex;
  flex-direction:column;justify-content:center;padding:0 80px;box-sizing:border-box;font-family:'Liberation Sans'">
 <h1 style="font-size:72px;font-weight:700;color:#fff;margin:0;text-shadow:0 4px 24px rgba(0,0,0,.5)">Ship it, Friday 🚀</h1>
 <p style="font-size:32px;color:#f0f0f0">Release notes · v2.4 — 12 fixes</p>
 <div style="width:240px;height:80px;border-radius:24px;background:#fff;box-shadow:0 10px 30px rgba(0,0,0,.4)"></div>
</div></body></html>`

// mixed adds what a card seldom has: glyphs from fallback fonts, scripts
// without a font here, SVG, form controls.
const mixed = `<!DOCTYPE html><html><body style="margin:0;font-family:sans-serif">
<h1 style="font:700 64px 'Liberation Sans'">Hello — ünïcödé ✓ 😀🎉</h1>
<p style="font:20px serif;width:900px">Lorem ipsum dolor sit amet, consectetur adipiscing elit. 日本語 العربية</p>
<svg width="200" height="100"><circle cx="50" cy="50" r="40" fill="rgba(0,128,0,.5)"/><text x="100" y="50">SVG</text></svg>
<input type="checkbox" checked> <button>Button</button> <select><option>Select</option></select> <input type="range">
</body></html>`

// TestShellDrawsAsChromium: the headless shell, which the renders use,
// draws what the whole browser draws. A card comes out the same to the
// bit; on a page of fallback glyphs and controls, the edges of a few glyphs
// drawn from fallback fonts are anti-aliased differently (measured with
// Chromium 156: 442 pixels of 3 million, the same shapes), so at most 0.05 %
// of its pixels may differ.
func TestShellDrawsAsChromium(t *testing.T) {
	for _, tc := range []struct {
		name, html string
		differ     float64
	}{
		{"card", card, 0},
		{"fallback glyphs and controls", mixed, 0.0005},
	} {
		t.Run(tc.name, func(t *testing.T) {
			full := capture(t, Full, tc.html)
			shell := capture(t, HeadlessShell, tc.html)
			if full.Bounds() != shell.Bounds() || full.Bounds().Dx() != 2400 || full.Bounds().Dy() != 1260 {
				t.Fatalf("chromium %v, the shell %v, want 2400×1260 both", full.Bounds(), shell.Bounds())
			}
			differ, inked := 0, 0
			b := full.Bounds()
			for y := b.Min.Y; y < b.Max.Y; y++ {
				for x := b.Min.X; x < b.Max.X; x++ {
					r1, g1, b1, _ := full.At(x, y).RGBA()
					r2, g2, b2, _ := shell.At(x, y).RGBA()
					if r1 != r2 || g1 != g2 || b1 != b2 {
						differ++
					}
					if r1>>8 < 200 || g1>>8 < 200 || b1>>8 < 200 {
						inked++
					}
				}
			}
			if inked < 10000 {
				t.Fatalf("%d pixels drawn: the page did not render, this test compares nothing", inked)
			}
			t.Logf("%d of %d pixels differ", differ, b.Dx()*b.Dy())
			if share := float64(differ) / float64(b.Dx()*b.Dy()); share > tc.differ {
				t.Fatalf("%d pixels differ (%.4f %%), at most %.4f %% allowed", differ, share*100, tc.differ*100)
			}
		})
	}
}

// capture draws html at 1200×630, scale 2, in a tab of the browser bin,
// the way the renders do: written into the document, then a fast PNG.
func capture(t *testing.T, bin, html string) image.Image {
	t.Helper()
	tab := NewTab(t, chromedp.ExecPath(bin), chromedp.Flag("hide-scrollbars", true), chromedp.Flag("font-render-hinting", "none"))
	arg, err := json.Marshal(html)
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	err = chromedp.Do(tab, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: 1200, Height: 630, DeviceScaleFactor: 2}); err != nil {
			return err
		}
		write := `((html) => { document.open(); document.write(html); document.close();
		  return document.fonts.ready.then(() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))); })(` + string(arg) + `)`
		if _, err := cdp.Call(ctx, tg, runtime.Evaluate, runtime.EvaluateParams{Expression: write, AwaitPromise: new(true)}); err != nil {
			return err
		}
		res, err := cdp.Call(ctx, tg, page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng,
			Clip: &page.Viewport{Width: 1200, Height: 630, Scale: 1}, OptimizeForSpeed: new(true)})
		data = res.Data
		return err
	}))
	if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	return img
}
