package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// noisePage is a document of n 600×600 images of random pixels, which a
// PDF keeps losslessly: more than 1 MB each.
func noisePage(n int) string {
	return fmt.Sprintf(`<script>
let seed = 1;
const rand = () => { seed ^= seed << 13; seed ^= seed >>> 17; seed ^= seed << 5; return (seed >>> 0) / 4294967296; };
addEventListener("DOMContentLoaded", () => {
  for (let i = 0; i < %d; i++) {
    const c = document.createElement("canvas");
    c.width = c.height = 600;
    const g = c.getContext("2d"), d = g.createImageData(600, 600);
    for (let j = 0; j < d.data.length; j++) d.data[j] = j %% 4 == 3 ? 255 : rand() * 256;
    g.putImageData(d, 0, 0);
    const img = document.createElement("img");
    img.src = c.toDataURL("image/png");
    document.body.appendChild(img);
  }
});
</script>`, n)
}

// TestPDFSizeBounded: a PDF comes from Chromium as a stream read in
// chunks, whole when it is larger than one chunk, and a PDF past
// MaxPDFBytes fails the render with ErrTooLarge instead of being held.
func TestPDFSizeBounded(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Tabs = 1; c.MaxPDFBytes = 4 << 20 })
	pdfOf := func(n int) ([]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := e.Render(ctx, &Request{OrgID: "o", HTML: noisePage(n), DeviceScale: 1, MaxWait: 5 * time.Second,
			MaxWidth: 16384, MaxHeight: 16384, PDF: &PDFOptions{PrintBackground: true}})
		if err != nil {
			return nil, err
		}
		return res.Data, nil
	}
	pdf, err := pdfOf(2)
	if err != nil {
		t.Fatalf("a 2-image PDF: %v", err)
	}
	if len(pdf) <= pdfChunk || !bytes.HasPrefix(pdf, []byte("%PDF-")) || !bytes.HasSuffix(bytes.TrimSpace(pdf), []byte("%%EOF")) {
		t.Fatalf("a 2-image PDF: %d bytes, starting %q, ending %q; want a whole PDF of more than one chunk (%d)",
			len(pdf), pdf[:min(8, len(pdf))], pdf[max(0, len(pdf)-8):], pdfChunk)
	}
	// Chunks joined out of order or twice would break the image streams,
	// which poppler reports as it draws the pages.
	dir := t.TempDir()
	file := filepath.Join(dir, "out.pdf")
	if err := os.WriteFile(file, pdf, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("pdftoppm", "-r", "10", "-png", file, filepath.Join(dir, "page")).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("pdftoppm: %v\n%s (make test installs poppler-utils)", err, out)
	}
	if _, err := pdfOf(6); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a 6-image PDF past 4 MiB: %v, want ErrTooLarge", err)
	}
}
