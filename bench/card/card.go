package card

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
	Width  = 1200
	Height = 630
	Scale  = 2
)

// HTML returns a 1200×630 social card as an HTML snippet, the way
// API clients send one (Pictor crops a snippet to its content): a
// gradient background, a large title with a soft shadow and a subtitle.
// Every n and nonce give a different card (the text and the hues change),
// so no cache anywhere can answer it, while the work to render one stays
// the same.
func HTML(n int, nonce string) string { return page(n, nonce, false) }

// FlatHTML is HTML with a solid background and no text shadow:
// the same layout and text, without the two things that make a card's PNG
// large and slow to encode (a dithered gradient) and to paint (a blur).
func FlatHTML(n int, nonce string) string { return page(n, nonce, true) }

func page(n int, nonce string, flat bool) string {
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
`, Width, Height, background, shadow, n, html.EscapeString(nonce))
}

// Document wraps a card snippet into the whole document a file-based
// tool such as the Chromium CLI needs; the card fills its 1200×630 window.
func Document(snippet string) string {
	return "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"></head><body>\n" + snippet + "</body></html>\n"
}

// TileHTML returns a w×h card as an HTML snippet, smaller than HTML's
// social card: a gradient and a title whose hue and text change with n
// and nonce, so that every tile is a distinct image.
func TileHTML(n, w, h int, nonce string) string {
	h1, h2 := (n*53)%360, (n*53+120)%360
	return fmt.Sprintf(`<style>html,body{margin:0;padding:0}
.t{box-sizing:border-box;width:%dpx;height:%dpx;padding:24px 28px;display:flex;flex-direction:column;justify-content:space-between;
background:linear-gradient(135deg,hsl(%d,70%%,35%%),hsl(%d,75%%,55%%));color:#fff;font-family:"DejaVu Sans",sans-serif}
h1{margin:0;font-size:34px;line-height:1.15}.f{font-size:16px;opacity:.85}</style>
<div class="t"><h1>Tile number %d of the edge benchmark</h1><div class="f">pictor.example · %s</div></div>
`, w, h, h1, h2, n, html.EscapeString(nonce))
}

var pngSignature = []byte("\x89PNG\r\n\x1a\n")

// pngSize reads the width and height from the first 24 bytes of a PNG.
func pngSize(head []byte) (w, h int, err error) {
	if len(head) < 24 || !bytes.Equal(head[:8], pngSignature) || string(head[12:16]) != "IHDR" {
		return 0, 0, errors.New("not a PNG")
	}
	return int(binary.BigEndian.Uint32(head[16:20])), int(binary.BigEndian.Uint32(head[20:24])), nil
}

// CheckPNG verifies head starts a PNG of the card's size.
func CheckPNG(head []byte) error { return CheckPNGSize(head, Width*Scale, Height*Scale) }

// CheckPNGSize verifies head (the first 24 bytes at least) starts a PNG
// of w×h pixels.
func CheckPNGSize(head []byte, w, h int) error {
	gw, gh, err := pngSize(head)
	if err != nil {
		return err
	}
	if gw != w || gh != h {
		return fmt.Errorf("PNG is %d×%d, want %d×%d", gw, gh, w, h)
	}
	return nil
}

// CheckWebPWidth verifies b is a WebP w pixels wide: a card resized.
func CheckWebPWidth(b []byte, w int) error {
	gw, _, err := webpSize(b)
	if err != nil {
		return err
	}
	if gw != w {
		return fmt.Errorf("WebP is %d px wide, want %d", gw, w)
	}
	return nil
}

// webpSize reads the width and height of a WebP from its first 30 bytes
// (simple lossy VP8, lossless VP8L or extended VP8X).
func webpSize(head []byte) (w, h int, err error) {
	if len(head) < 30 || string(head[:4]) != "RIFF" || string(head[8:12]) != "WEBP" {
		return 0, 0, errors.New("not a WebP")
	}
	switch string(head[12:16]) {
	case "VP8 ":
		// Frame tag (3 bytes), start code 9d 01 2a, then 14-bit sizes.
		if head[23] != 0x9d || head[24] != 0x01 || head[25] != 0x2a {
			return 0, 0, errors.New("WebP VP8 without its start code")
		}
		return int(binary.LittleEndian.Uint16(head[26:28]) & 0x3fff), int(binary.LittleEndian.Uint16(head[28:30]) & 0x3fff), nil
	case "VP8L":
		if head[20] != 0x2f {
			return 0, 0, errors.New("WebP VP8L without its signature")
		}
		v := binary.LittleEndian.Uint32(head[21:25])
		return int(v&0x3fff) + 1, int(v>>14&0x3fff) + 1, nil
	case "VP8X":
		le24 := func(b []byte) int { return int(b[0]) | int(b[1])<<8 | int(b[2])<<16 }
		return le24(head[24:27]) + 1, le24(head[27:30]) + 1, nil
	}
	return 0, 0, fmt.Errorf("WebP chunk %q unknown", head[12:16])
}
