package render

import "testing"

// TestResetClearsWindowName: window.name survives navigations in a tab,
// so the reset clears it: a render's page does not see the one the
// previous render on the tab set.
func TestResetClearsWindowName(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Tabs = 1 })
	page := boxPage(`const ok = window.name === "";
window.name = "left behind";`)
	for i := range 3 {
		if c := renderBox(t, e, i, page); c != boxGreen {
			t.Fatalf("render %d: box is %v: the page saw the previous render's window.name", i, c)
		}
	}
}
