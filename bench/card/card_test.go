package card

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/bench/internal/benchtest"
)

func TestCheckCardPNG(t *testing.T) {
	tests := []struct {
		name    string
		head    []byte
		wantErr string
	}{
		{"the card at scale 2", benchtest.PNGHead(2400, 1260), ""},
		{"the default viewport instead", benchtest.PNGHead(3840, 2160), "PNG is 3840×2160, want 2400×1260"},
		{"scale 1", benchtest.PNGHead(1200, 630), "want 2400×1260"},
		{"JPEG", append([]byte("\xff\xd8\xff\xe0"), make([]byte, 20)...), "not a PNG"},
		{"short", pngSignature, "not a PNG"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckPNG(tt.head)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("CheckPNG = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestCheckPNGSize(t *testing.T) {
	if err := CheckPNGSize(benchtest.PNGHead(1200, 600), 1200, 600); err != nil {
		t.Fatal(err)
	}
	if err := CheckPNGSize(benchtest.PNGHead(1200, 630), 1200, 600); err == nil || !strings.Contains(err.Error(), "PNG is 1200×630, want 1200×600") {
		t.Fatalf("CheckPNGSize = %v, want the sizes named", err)
	}
}

func TestCardHTML(t *testing.T) {
	a, b := HTML(1, "x"), HTML(2, "x")
	if a == b || HTML(1, "x") != a || HTML(1, "y") == a {
		t.Fatal("cards are not unique per number and nonce, or not deterministic")
	}
	lower := strings.ToLower(a)
	if strings.Contains(lower, "<html") || strings.Contains(lower, "<body") {
		t.Fatal("the card must be a snippet, which Pictor crops to its content")
	}
	if !strings.Contains(a, "width:1200px;height:630px") {
		t.Fatal("the card is not 1200×630")
	}
	if !strings.Contains(HTML(3, "<&>"), "&lt;&amp;&gt;") {
		t.Fatal("the nonce is not escaped")
	}
	if d := Document(a); !strings.HasPrefix(d, "<!DOCTYPE html>") || !strings.Contains(d, a) {
		t.Fatal("Document does not wrap the card")
	}
	if !strings.Contains(a, "linear-gradient") || !strings.Contains(a, "text-shadow:0 4px") {
		t.Fatal("the card lost its gradient or its title's shadow")
	}
	flat := FlatHTML(1, "x")
	if strings.Contains(flat, "gradient") || !strings.Contains(flat, "text-shadow:none") ||
		!strings.Contains(flat, "width:1200px;height:630px") || !strings.Contains(flat, "card number 1 ") {
		t.Fatalf("the flat card is not the same card without gradient and shadow: %s", flat)
	}
}

func TestWebPSize(t *testing.T) {
	riff := func(chunk string, payload []byte) []byte {
		b := append([]byte("RIFF\x00\x00\x00\x00WEBP"), chunk...)
		b = append(b, 0, 0, 0, 0) // chunk size
		b = append(b, payload...)
		return append(b, make([]byte, 32)...)
	}
	vp8 := []byte{0, 0, 0, 0x9d, 0x01, 0x2a}
	vp8 = binary.LittleEndian.AppendUint16(vp8, 600)
	vp8 = binary.LittleEndian.AppendUint16(vp8, 315|2<<14) // scale bits are not the size
	vp8l := binary.LittleEndian.AppendUint32([]byte{0x2f}, uint32(641-1)|uint32(336-1)<<14)
	vp8x := []byte{0, 0, 0, 0, 0x57, 0x02, 0, 0x3a, 0x01, 0} // 600-1 = 0x257, 315-1 = 0x13a
	tests := []struct {
		name    string
		b       []byte
		w, h    int
		wantErr string
	}{
		{"lossy", riff("VP8 ", vp8), 600, 315, ""},
		{"lossless", riff("VP8L", vp8l), 641, 336, ""},
		{"extended", riff("VP8X", vp8x), 600, 315, ""},
		{"PNG", benchtest.PNGHead(600, 315), 0, 0, "not a WebP"},
		{"VP8 without start code", riff("VP8 ", make([]byte, 10)), 0, 0, "start code"},
		{"unknown chunk", riff("ALPH", nil), 0, 0, "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, h, err := webpSize(tt.b)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || w != tt.w || h != tt.h {
				t.Fatalf("got %d×%d, %v; want %d×%d", w, h, err, tt.w, tt.h)
			}
		})
	}
}
