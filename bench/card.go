package bench

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"html"
)

// Card geometry: a social card (Open Graph image) rendered at device
// scale 2, as issue 3's benchmark asks.
const (
	CardWidth  = 1200
	CardHeight = 630
	CardScale  = 2
)

// CardHTML returns a 1200×630 social card as an HTML snippet, the way
// API clients send one (Pictor crops a snippet to its content): a
// gradient background, a large title with a soft shadow and a subtitle.
// Every n and nonce give a different card (the text and the hues change),
// so no cache anywhere can answer it, while the work to render one stays
// the same.
func CardHTML(n int, nonce string) string { return card(n, nonce, false) }

// FlatCardHTML is CardHTML with a solid background and no text shadow:
// the same layout and text, without the two things that make a card's PNG
// large and slow to encode (a dithered gradient) and to paint (a blur).
func FlatCardHTML(n int, nonce string) string { return card(n, nonce, true) }

func card(n int, nonce string, flat bool) string {
	h1, h2 := (n*37)%360, (n*37+140)%360
	background := fmt.Sprintf("linear-gradient(135deg,hsl(%d,70%%,35%%) 0%%,hsl(%d,75%%,50%%) 100%%)", h1, h2)
	shadow := "0 4px 18px rgba(0,0,0,.35)"
	if flat {
		background, shadow = fmt.Sprintf("hsl(%d,70%%,35%%)", h1), "none"
	}
	return fmt.Sprintf(`<style>
html,body{margin:0;padding:0}
.card{box-sizing:border-box;width:%dpx;height:%dpx;padding:72px 80px;display:flex;flex-direction:column;justify-content:space-between;
background:%s;color:#fff;font-family:"DejaVu Sans","Liberation Sans",sans-serif}
.kicker{font-size:28px;letter-spacing:4px;text-transform:uppercase;opacity:.8}
h1{margin:0;font-size:76px;line-height:1.1;font-weight:800;text-shadow:%s}
.foot{display:flex;justify-content:space-between;font-size:30px;opacity:.9}
</style><div class="card">
<div class="kicker">Pictor benchmark</div>
<h1>Rendering social card number %d at device scale two</h1>
<div class="foot"><span>pictor.example</span><span>%s</span></div>
</div>
`, CardWidth, CardHeight, background, shadow, n, html.EscapeString(nonce))
}

// CardDocument wraps a card snippet into the whole document a file-based
// tool such as the Chromium CLI needs; the card fills its 1200×630 window.
func CardDocument(snippet string) string {
	return "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"></head><body>\n" + snippet + "</body></html>\n"
}

var pngSignature = []byte("\x89PNG\r\n\x1a\n")

// pngSize reads the width and height from the first 24 bytes of a PNG.
func pngSize(head []byte) (w, h int, err error) {
	if len(head) < 24 || !bytes.Equal(head[:8], pngSignature) || string(head[12:16]) != "IHDR" {
		return 0, 0, errors.New("not a PNG")
	}
	return int(binary.BigEndian.Uint32(head[16:20])), int(binary.BigEndian.Uint32(head[20:24])), nil
}

// checkCardPNG verifies head starts a PNG of the card's size.
func checkCardPNG(head []byte) error {
	w, h, err := pngSize(head)
	if err != nil {
		return err
	}
	if w != CardWidth*CardScale || h != CardHeight*CardScale {
		return fmt.Errorf("PNG is %d×%d, want %d×%d", w, h, CardWidth*CardScale, CardHeight*CardScale)
	}
	return nil
}
