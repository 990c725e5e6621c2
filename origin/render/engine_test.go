package render

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"testing"
	"time"

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
		if left := Processes(cfg.ProfileDir); len(left) > 0 {
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
