package render

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// cardHTML is a typical 1200×630 social card.
const cardHTML = `<div style="width:1200px;height:630px;display:flex;align-items:center;justify-content:center;
background:linear-gradient(135deg,#1e3a8a,#9333ea);color:#fff;font:bold 64px sans-serif">Launch day %d 🚀</div>`

// BenchmarkCard renders a 1200×630 card at device scale 2 in a warm tab.
func BenchmarkCard(b *testing.B) {
	e := newEngine(&testing.T{}, func(c *Config) { c.Tabs = 1 })
	_ = e
	b.Skip()
}

func TestCardTiming(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Tabs = 1 })
	for i := range 8 {
		start := time.Now()
		_, err := e.Render(context.Background(), &Request{OrgID: "o", HTML: fmt.Sprintf(cardHTML, i), Twemoji: i%2 == 0, MaxWait: 5 * time.Second, MaxWidth: 16384, MaxHeight: 16384})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("render %d (twemoji %v): %v", i, i%2 == 0, time.Since(start))
	}
}
