package bench

import (
	"bytes"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/bench/internal/benchtest"
	"github.com/pictorhq/pictor/bench/load"
	"github.com/pictorhq/pictor/bench/report"
)

func TestPageChecks(t *testing.T) {
	ms := time.Millisecond
	result := func(what, side string, clients, ok int, lo, hi time.Duration) *load.Result {
		return benchtest.Result(pageResult(what, side), clients, ok, 0, 10*time.Second, lo, hi)
	}
	gradPage := result("gradient", sidePage, 1, 101, 200*ms, 240*ms)         // p50 220 ms
	gradClose := result("gradient", sidePictor, 1, 101, 220*ms, 260*ms)      // p50 240 ms: 1.09×
	gradFar := result("gradient", sidePictor, 1, 101, 262*ms, 302*ms)        // p50 282 ms: 1.28×
	flatPage := result("flat", sidePage, 1, 101, 70*ms, 84*ms)               // p50 77 ms
	flatFar := result("flat", sidePictor, 1, 101, 128*ms, 142*ms)            // p50 135 ms: 1.75×
	flatNone := result("flat", sidePictor, 1, 0, 0, 0)                       // nothing succeeded
	poolPage := result(pagePoolFull+"gradient", sidePage, 2, 80, ms, ms)     // 8/s
	poolAhead := result(pagePoolFull+"gradient", sidePictor, 4, 84, ms, ms)  // 8.4/s: 1.05×
	poolBehind := result(pagePoolFull+"gradient", sidePictor, 4, 60, ms, ms) // 6/s: 0.75×
	poolFlatPage := result(pagePoolFull+"flat", sidePage, 2, 0, ms, ms)      // nothing succeeded
	poolFlat := result(pagePoolFull+"flat", sidePictor, 4, 100, ms, ms)      // 10/s
	gradName := "render-vs-page/gradient-pictor p50 ≤ 1.1× render-vs-page/gradient-puppeteer's"
	flatName := "render-vs-page/flat-pictor p50 ≤ 1.1× render-vs-page/flat-puppeteer's"
	poolName := "render-vs-page/pool-full-gradient-pictor throughput ≥ 1× Puppeteer's pages"
	poolFlatName := "render-vs-page/pool-full-flat-pictor throughput ≥ 1× Puppeteer's pages"
	tests := []struct {
		name    string
		results []*load.Result
		want    []report.CheckResult
	}{
		{"the page alone: no check", []*load.Result{gradPage, flatPage, poolPage}, nil},
		{
			name:    "pass",
			results: []*load.Result{gradPage, gradClose, poolPage, poolAhead},
			want: []report.CheckResult{
				{Name: gradName, Measured: "1.09× (p50 240 ms ÷ 220 ms)", Pass: true},
				{Name: poolName, Measured: "1.05× (8.40 renders/s ÷ 8.00 renders/s of render-vs-page/pool-full-gradient-puppeteer)", Pass: true},
			},
		},
		{
			name:    "fail, as on issue 19's machine",
			results: []*load.Result{gradPage, gradFar, flatPage, flatFar, poolPage, poolBehind},
			want: []report.CheckResult{
				{Name: gradName, Measured: "1.28× (p50 282 ms ÷ 220 ms)", Pass: false},
				{Name: flatName, Measured: "1.75× (p50 135 ms ÷ 76.8 ms)", Pass: false},
				{Name: poolName, Measured: "0.75× (6.00 renders/s ÷ 8.00 renders/s of render-vs-page/pool-full-gradient-puppeteer)", Pass: false},
			},
		},
		{
			name:    "nothing to compare",
			results: []*load.Result{flatPage, flatNone, poolFlatPage, poolFlat},
			want: []report.CheckResult{
				{Name: flatName, Measured: "no successful requests to compare", Pass: false},
				{Name: poolFlatName, Measured: "render-vs-page/pool-full-flat-puppeteer had no successful requests", Pass: false},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Evaluate(pageChecks(), tt.results)
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("check %d:\ngot  %+v\nwant %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
	// The report sets each pair side by side.
	var pairs []string
	for _, c := range pageComparisons() {
		pairs = append(pairs, c.Subject+" "+c.Baseline)
	}
	for _, want := range []string{
		"render-vs-page/gradient-pictor render-vs-page/gradient-puppeteer",
		"render-vs-page/pool-full-flat-pictor render-vs-page/pool-full-flat-puppeteer",
	} {
		if !strings.Contains(strings.Join(pairs, "\n"), want) {
			t.Errorf("comparisons %q lack %q", pairs, want)
		}
	}
}

// cardImage draws a w×h image of background bg with a white rectangle
// (the text) of a quarter of its size at (x, y).
func cardImage(w, h int, bg color.NRGBA, x, y int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.NewUniform(bg), image.Point{}, draw.Src)
	draw.Draw(img, image.Rect(x, y, x+w/4, y+h/4), image.NewUniform(color.White), image.Point{}, draw.Src)
	return img
}

func encodePNG(t *testing.T, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestDecodeCard(t *testing.T) {
	bg := color.NRGBA{30, 60, 150, 255}
	tests := []struct {
		name    string
		png     func(*testing.T) []byte
		wantErr string
	}{
		{"a card", func(t *testing.T) []byte { return encodePNG(t, cardImage(240, 126, bg, 10, 10)) }, ""},
		{"one flat color", func(t *testing.T) []byte { return encodePNG(t, cardImage(240, 126, bg, 240, 0)) }, "flat"},
		{"text on 1 % of it", func(t *testing.T) []byte { return encodePNG(t, cardImage(240, 126, bg, 230, 120)) }, "flat"},
		{"half the size", func(t *testing.T) []byte { return encodePNG(t, cardImage(120, 63, bg, 10, 10)) }, "120×63, want 240×126"},
		{"not a PNG", func(*testing.T) []byte { return []byte("RIFF....WEBP") }, "png"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeCard(tt.png(t), 240, 126)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("decodeCard = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestMeanDiff(t *testing.T) {
	bg := color.NRGBA{30, 60, 150, 255}
	a := cardImage(400, 200, bg, 10, 10)
	moved := cardImage(400, 200, bg, 20, 10) // 10 columns of the text moved
	// Two strips of 10×50 pixels change from bg to white and back.
	strips := 2 * 10 * 50 * ((255 - 30) + (255 - 60) + (255 - 150))
	tests := []struct {
		name string
		a, b image.Image
		want float64
	}{
		{"the same", a, cardImage(400, 200, bg, 10, 10), 0},
		{"text moved", a, moved, float64(strips) / (400 * 200 * 3)},
		{"other sizes", a, cardImage(200, 100, bg, 10, 10), 255},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := meanDiff(tt.a, tt.b); math.Abs(got-tt.want) > 1e-9 {
				t.Fatalf("meanDiff = %v, want %v", got, tt.want)
			}
		})
	}
}
