package render

import (
	"testing"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// TestPopupsBlocked: window.open without a user gesture is blocked, as in
// a browser (it returns null), so renders cannot leave windows open in
// their tab's context: the browser's page count stays the same across
// renders that try.
func TestPopupsBlocked(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Tabs = 1 })
	page := boxPage(`let opened = 0;
for (let i = 0; i < 3; i++) if (window.open("/doc/popup" + i, "_blank")) opened++;
const a = document.createElement("a"); a.href = "/doc/link"; a.target = "_blank"; a.click();
const ok = opened === 0;`)
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
		if c := renderBox(t, e, i, page); c != boxGreen {
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
