package render

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestPageMemoryBounded: a page that fills memory with typed arrays
// (which V8's heap limit does not cover) has its renderer killed once it
// passes RendererMemory; its render fails with ErrPageMemory, without
// waiting for the render deadline, and the next render works.
func TestPageMemoryBounded(t *testing.T) {
	e := newEngine(t, func(c *Config) {
		c.Tabs = 1
		c.RendererMemory = 256 << 20
		c.Timeout = 30 * time.Second
	})
	hog := `<div style="width:100px;height:50px;background:red"></div><script>
const kept = [];
try { for (;;) kept.push(new Uint8Array(5e7).fill(1)); } catch (e) {}
</script>`
	_, err := e.Render(context.Background(), &Request{OrgID: "o", HTML: hog, DeviceScale: 1, MaxWait: 2 * time.Second, MaxWidth: 16384, MaxHeight: 16384})
	if !errors.Is(err, ErrPageMemory) {
		t.Fatalf("render of a memory hog: %v, want ErrPageMemory", err)
	}
	res, err := e.Render(context.Background(), &Request{OrgID: "o", HTML: `<div style="width:100px;height:50px;background:blue"></div>`,
		DeviceScale: 1, MaxWait: 2 * time.Second, MaxWidth: 16384, MaxHeight: 16384})
	if err != nil {
		t.Fatalf("render after the kill: %v", err)
	}
	if b := decodePNG(t, res.Data).Bounds(); b.Dx() != 100 || b.Dy() != 50 {
		t.Fatalf("render after the kill: %v", b)
	}
}
