package render

import (
	"context"
	"image/color"
	"testing"
	"time"
)

// TestResetClearsWindowName: window.name survives navigations in a tab,
// so the reset clears it: a render's page does not see the one the
// previous render on the tab set.
func TestResetClearsWindowName(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Tabs = 1 })
	html := `<script>
const fresh = window.name === "";
window.name = "left behind";
document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("box").style.background = fresh ? "rgb(0,128,0)" : "rgb(255,0,0)";
});
</script><div id="box" style="width:100px;height:50px;background:rgb(0,0,255)"></div>`
	for i := range 3 {
		res, err := e.Render(context.Background(), &Request{OrgID: "o", HTML: html, DeviceScale: 1, MaxWait: 2 * time.Second, MaxWidth: 16384, MaxHeight: 16384})
		if err != nil {
			t.Fatalf("render %d: %v", i, err)
		}
		if c := rgba(decodePNG(t, res.Data), 50, 25); c != (color.NRGBA{0, 128, 0, 255}) {
			t.Fatalf("render %d: box is %v: the page saw the previous render's window.name", i, c)
		}
	}
}
