package imaging

// Format is an output format, chosen by the URL's extension.
type Format string

// Formats.
const (
	PNG  Format = "png"
	JPEG Format = "jpg"
	WebP Format = "webp"
	PDF  Format = "pdf"
)

// ParseFormat maps a URL extension, without its dot, to a Format: none
// means PNG, letters match in either case (ASCII only) and "jpeg" is
// "jpg", so every spelling of a format names the same Format, the one its
// renditions are cached and made under. ok is false for any other
// extension. It allocates nothing.
func ParseFormat(ext string) (f Format, ok bool) {
	var buf [len("jpeg")]byte
	if len(ext) > len(buf) {
		return "", false
	}
	for i := range len(ext) {
		c := ext[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	switch string(buf[:len(ext)]) {
	case "", "png":
		return PNG, true
	case "jpg", "jpeg":
		return JPEG, true
	case "webp":
		return WebP, true
	case "pdf":
		return PDF, true
	}
	return "", false
}

// ContentType is the media type served for f.
func (f Format) ContentType() string {
	switch f {
	case PNG:
		return "image/png"
	case JPEG:
		return "image/jpeg"
	case WebP:
		return "image/webp"
	case PDF:
		return "application/pdf"
	}
	return "application/octet-stream"
}

// maxSide is the largest width or height the format can encode.
func (f Format) maxSide() int {
	switch f {
	case WebP:
		return 16383
	case JPEG:
		return 65535
	}
	return 1 << 30
}
