package render

import (
	"context"
	"image/color"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// TestPopupsBlocked: window.open without a user gesture is blocked, as in
// a browser (it returns null), so renders cannot leave windows open in
// their tab's context: the browser's page count stays the same across
// renders that try.
func TestPopupsBlocked(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Tabs = 1 })
	html := `<script>
let opened = 0;
for (let i = 0; i < 3; i++) if (window.open("/doc/popup" + i, "_blank")) opened++;
const a = document.createElement("a"); a.href = "/doc/link"; a.target = "_blank"; a.click();
document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("box").style.background = opened ? "rgb(255,0,0)" : "rgb(0,128,0)";
});
</script><div id="box" style="width:100px;height:50px;background:rgb(0,0,255)"></div>`
	pages := func() int {
		e.mu.Lock()
		b := e.current
		e.mu.Unlock()
		res, err := chromedp.CallBrowser(b.ctx, target.GetTargets, target.GetTargetsParams{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, ti := range res.TargetInfos {
			if ti.Type == "page" {
				n++
			}
		}
		return n
	}
	var before int
	for i := range 3 {
		res, err := e.Render(context.Background(), &Request{OrgID: "o", HTML: html, DeviceScale: 1, MaxWait: 2 * time.Second, MaxWidth: 16384, MaxHeight: 16384})
		if err != nil {
			t.Fatalf("render %d: %v", i, err)
		}
		if c := rgba(decodePNG(t, res.Data), 50, 25); c != (color.NRGBA{0, 128, 0, 255}) {
			t.Fatalf("render %d: box is %v: window.open was not blocked", i, c)
		}
		n := pages()
		if i == 0 {
			before = n
		} else if n != before {
			t.Fatalf("render %d: %d pages in the browser, %d after the first render", i, n, before)
		}
	}
}
