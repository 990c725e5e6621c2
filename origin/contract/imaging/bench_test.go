package imaging

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// benchMaster returns the 2400×1260 master of issue 5's resize target: the
// PNG named by PICTOR_BENCH_PNG (for example a card Chromium rendered), or
// a synthetic card — a diagonal gradient with blocks of "text" and a soft
// shadow — encoded the way Chromium's fast path does (fast deflate).
func benchMaster(b testing.TB) []byte {
	b.Helper()
	if path := os.Getenv("PICTOR_BENCH_PNG"); path != "" {
		src, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		return src
	}
	const w, h = 2400, 1260
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			t := float64(x+y) / float64(w+h)
			img.SetNRGBA(x, y, color.NRGBA{R: uint8(150 - 120*t), G: uint8(90 + 100*t), B: uint8(40 + 180*t), A: 255})
		}
	}
	// Lines of glyph-like blocks with a shadow, like a card's title.
	for line := range 4 {
		y0 := 300 + line*170
		for i := range 40 {
			x0 := 160 + i*52
			gw, gh := 30+(i*7)%18, 90+(i*13)%40
			for y := y0; y < y0+gh; y++ {
				for x := x0; x < x0+gw; x++ {
					if (x+y+i)%11 == 0 {
						continue // counters of the glyphs
					}
					img.SetNRGBA(x+6, y+8, color.NRGBA{20, 20, 30, 255})
					img.SetNRGBA(x, y, color.NRGBA{255, 255, 255, 255})
				}
			}
		}
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkResizeWebP is issue 5's resize target: a 2400×1260 PNG master to
// a 600 px wide WebP, next to vipsthumbnail doing the same on the same file
// (a process per image, start included, as the bench harness runs it).
// cpu-ms/op is the CPU time per image, of this process or of the
// vipsthumbnail children.
func BenchmarkResizeWebP(b *testing.B) {
	src := benchMaster(b)
	b.Run("pictor", func(b *testing.B) {
		o, err := Parse(WebP, []byte("width=600"))
		if err != nil {
			b.Fatal(err)
		}
		var n int
		cpu0, ok := cpuTime(false)
		for b.Loop() {
			out, err := Apply(context.Background(), src, o, WebP)
			if err != nil {
				b.Fatal(err)
			}
			n = len(out)
		}
		reportCPU(b, false, cpu0, ok)
		b.ReportMetric(float64(n), "B/image")
	})
	bin, err := exec.LookPath("vipsthumbnail")
	if err != nil {
		b.Log("vipsthumbnail is not installed: no comparison")
		return
	}
	dir := b.TempDir()
	in := filepath.Join(dir, "in.png")
	if err := os.WriteFile(in, src, 0o600); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct{ name, out string }{
		{"vipsthumbnail", "out.webp"},           // its default quality, 75
		{"vipsthumbnail-Q90", "out.webp[Q=90]"}, // Pictor's quality
	} {
		b.Run(tc.name, func(b *testing.B) {
			out := filepath.Join(dir, tc.out)
			cpu0, ok := cpuTime(true)
			for b.Loop() {
				if msg, err := exec.Command(bin, in, "--size", "600x", "-o", out).CombinedOutput(); err != nil {
					b.Fatalf("vipsthumbnail: %v: %s", err, msg)
				}
			}
			reportCPU(b, true, cpu0, ok)
			if fi, err := os.Stat(filepath.Join(dir, "out.webp")); err == nil {
				b.ReportMetric(float64(fi.Size()), "B/image")
			}
		})
	}
}

// reportCPU adds the CPU time per image: on a shared machine it says more
// than the wall time, which counts waiting for a core.
func reportCPU(b *testing.B, children bool, start time.Duration, ok bool) {
	end, ok2 := cpuTime(children)
	if ok && ok2 && b.N > 0 {
		b.ReportMetric(float64(end-start)/float64(b.N)/1e6, "cpu-ms/op")
	}
}

// BenchmarkCropResizeWebP is the crop+resize pipeline on the same master:
// the centered square, 600 px wide.
func BenchmarkCropResizeWebP(b *testing.B) {
	src := benchMaster(b)
	o, err := Parse(WebP, []byte("aspect_ratio=1_1&crop_height=100%&width=600"))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Apply(context.Background(), src, o, WebP); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseKey is the per-request cost on the edge's hit path.
func BenchmarkParseKey(b *testing.B) {
	for _, q := range []string{
		"",
		"width=600",
		"width=600&height=315&dpi=144&dl=1&aspect_ratio=16_9&x_1=12.5%25&utm_source=news",
	} {
		b.Run(fmt.Sprintf("%d params", strings.Count(q, "=")), func(b *testing.B) {
			query := []byte(q)
			buf := make([]byte, 0, 128)
			b.ReportAllocs()
			for b.Loop() {
				o, err := Parse(JPEG, query)
				if err != nil {
					b.Fatal(err)
				}
				buf = o.Key(buf[:0])
			}
		})
	}
}
