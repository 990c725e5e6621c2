package imaging

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
)

var pngSignature = []byte("\x89PNG\r\n\x1a\n")

// pngSize reads a PNG's size from its IHDR chunk.
func pngSize(b []byte) (w, h int, ok bool) {
	if len(b) < 33 || !bytes.Equal(b[:8], pngSignature) || string(b[12:16]) != "IHDR" {
		return 0, 0, false
	}
	w, h = int(binary.BigEndian.Uint32(b[16:20])), int(binary.BigEndian.Uint32(b[20:24]))
	return w, h, w > 0 && h > 0
}

// setPNGDensity returns png with one pHYs chunk saying dpi, right after
// IHDR; any other pHYs is dropped and nothing else changes. ok is false when
// png's chunk structure is broken before the first IDAT.
func setPNGDensity(png []byte, dpi int) (out []byte, ok bool) {
	if _, _, ok := pngSize(png); !ok {
		return nil, false
	}
	const ihdrEnd = 8 + 12 + 13
	// Find any pHYs before the image data (the only place it may be).
	var drop [][2]int
	for i := ihdrEnd; ; {
		if i+12 > len(png) {
			return nil, false
		}
		n := int(binary.BigEndian.Uint32(png[i:]))
		end := i + 12 + n
		if n < 0 || end > len(png) || end < i {
			return nil, false
		}
		typ := string(png[i+4 : i+8])
		if typ == "IDAT" || typ == "IEND" {
			break
		}
		if typ == "pHYs" {
			drop = append(drop, [2]int{i, end})
		}
		i = end
	}
	// Pixels per metre, as PNG counts: 300 dpi is 11811.
	ppm := uint32((int64(dpi)*10000*2 + 254) / (254 * 2))
	var chunk [4 + 4 + 9 + 4]byte
	binary.BigEndian.PutUint32(chunk[0:], 9)
	copy(chunk[4:], "pHYs")
	binary.BigEndian.PutUint32(chunk[8:], ppm)
	binary.BigEndian.PutUint32(chunk[12:], ppm)
	chunk[16] = 1 // unit: metre
	binary.BigEndian.PutUint32(chunk[17:], crc32.ChecksumIEEE(chunk[4:17]))

	out = make([]byte, 0, len(png)+len(chunk))
	out = append(out, png[:ihdrEnd]...)
	out = append(out, chunk[:]...)
	from := ihdrEnd
	for _, d := range drop {
		out = append(out, png[from:d[0]]...)
		from = d[1]
	}
	return append(out, png[from:]...), true
}

// setJPEGDensity returns jpeg with a JFIF APP0 segment saying dpi right
// after SOI, replacing the JFIF segment there if any.
func setJPEGDensity(jpeg []byte, dpi int) (out []byte, ok bool) {
	if len(jpeg) < 4 || jpeg[0] != 0xFF || jpeg[1] != 0xD8 {
		return nil, false
	}
	rest := jpeg[2:]
	if len(rest) >= 9 && rest[0] == 0xFF && rest[1] == 0xE0 && string(rest[4:9]) == "JFIF\x00" {
		n := int(binary.BigEndian.Uint16(rest[2:]))
		if 2+n > len(rest) {
			return nil, false
		}
		rest = rest[2+n:]
	}
	app0 := [18]byte{
		0xFF, 0xE0, 0, 16, 'J', 'F', 'I', 'F', 0,
		1, 1, // version 1.01
		1, // units: dots per inch
		byte(dpi >> 8), byte(dpi), byte(dpi >> 8), byte(dpi),
		0, 0, // no thumbnail
	}
	out = make([]byte, 0, 2+len(app0)+len(rest))
	out = append(out, 0xFF, 0xD8)
	out = append(out, app0[:]...)
	return append(out, rest...), true
}
