package imaging

import (
	"bytes"

	"github.com/pictorhq/pictor/origin/contract/field"
)

// param is a known query parameter.
type param uint8

const (
	pWidth param = iota
	pHeight
	pDPI
	pDL
	pAspect
	pX1
	pX2
	pY1
	pY2
	pCropWidth
	pCropHeight
	pXOrigin
	pYOrigin
	numParams
)

var paramNames = [numParams]string{
	"width", "height", "dpi", "dl", "aspect_ratio", "x_1", "x_2", "y_1", "y_2",
	"crop_width", "crop_height", "x_origin", "y_origin",
}

func lookup(name []byte) (param, bool) {
	switch string(name) {
	case "width":
		return pWidth, true
	case "height":
		return pHeight, true
	case "dpi":
		return pDPI, true
	case "dl":
		return pDL, true
	case "aspect_ratio":
		return pAspect, true
	case "x_1":
		return pX1, true
	case "x_2":
		return pX2, true
	case "y_1":
		return pY1, true
	case "y_2":
		return pY2, true
	case "crop_width":
		return pCropWidth, true
	case "crop_height":
		return pCropHeight, true
	case "x_origin":
		return pXOrigin, true
	case "y_origin":
		return pYOrigin, true
	}
	return 0, false
}

// Lengths of the longest key and value worth decoding; longer ones are
// unknown keys or invalid values.
const (
	maxKey   = 16
	maxValue = 48
)

// Parse reads the transformations of a GET for format f from the raw query
// string (the bytes after '?', still percent-encoded). It returns canonical
// Options, or an *apierr.Error 400 whose validation_errors name every
// invalid parameter. It does not allocate unless it fails.
//
// # Sizes
//
// width and height are 1 to 5000; 0 means "not set". One alone keeps the
// aspect ratio (the other side rounds half up, at least 1 pixel). Both give
// exactly width×height: the image is scaled to cover that box and the
// overflow is cropped evenly (libvips thumbnail, crop=centre), so nothing is
// stretched and no bars are added. To keep another part, crop first, for
// example aspect_ratio=1200_630&y_origin=start&width=1200&height=630.
// Upscaling is allowed: the caller gets the size asked for. A resized result
// is at most 5000×5000, so width alone whose height would pass 5000 is a 400
// (ErrTooLarge) naming width. Results that are not resized (a format
// conversion, a crop) are bounded by the master and by the format (WebP
// 16383, JPEG 65535 pixels per side).
//
// # Crop
//
// Per axis (x shown; y is the same with y_1, y_2, crop_height, y_origin),
// every value is pixels ("120") or a percentage of the image ("33%",
// "12.5%", kept to 1/10000 of a percent); percentages round half up to
// pixels, and the crop happens before the resize.
//   - x_1 and x_2 bound the crop to [x_1, x_2); x_1 alone runs to the right
//     edge, x_2 alone starts at the left edge.
//   - crop_width sets the width: after x_1, before x_2, or aligned by
//     x_origin (start, center or end; center by default, leaning to the
//     start by half a pixel).
//   - aspect_ratio=W_H (positive integers; "W:H" too) derives the size that
//     crop_width/crop_height (or x_1 with x_2) leave open, or, when neither
//     is given, takes the largest W:H box inside the region, aligned by
//     x_origin/y_origin, or at x_1 / against x_2.
//   - 400 for: x_origin with x_1 or x_2; x_1, x_2 and crop_width together;
//     x_origin without crop_width or aspect_ratio (it would do nothing);
//     aspect_ratio with both a fixed width and a fixed height; x_2 not after
//     x_1 in the same unit; zero sizes; percentages over 100%. What depends
//     on the image (a crop past its edge, an empty crop) is found by Apply:
//     ErrCropOutOfBounds, also a 400 naming the parameters.
//
// # Density, download, PDF
//
// dpi is 30 to 600 and changes metadata only: the PNG pHYs chunk (pixels per
// metre) or a JFIF APP0 segment (dots per inch) in a JPEG. The compressed
// pixels are the same bytes as without it. WebP has no density field, so
// dpi is accepted and dropped for .webp. Without dpi a PNG keeps the
// master's pHYs (libvips writes 72 dpi when it has none) and a JPEG has no
// JFIF segment, as the origin's own conversions. dl is 1/true/on or
// 0/false/off (anything else is a 400); dl=1 sets Options.Download and never
// changes the bytes. A PDF accepts dl only.
//
// # Query syntax
//
// Unknown parameters are ignored; when a parameter repeats the last one
// counts; an empty value is a 400. Percent-encoding is decoded and a '%' not
// followed by two hex digits stands for itself, so "33%" and "33%25" are the
// same value. Names are case-sensitive.
func Parse(f Format, query []byte) (Options, error) {
	if len(query) == 0 {
		return Options{}, nil
	}
	o, errs := parse(f, query)
	if errs.Any() {
		return Options{}, errs.Err()
	}
	if f == WebP {
		o.DPI = 0 // WebP has no density field: the bytes are the same
	}
	return o.canonical(), nil
}

// parse returns the options as the query states them, before canonical().
func parse(f Format, query []byte) (Options, field.Errors) {
	var o Options
	var raw [numParams][]byte
	for len(query) > 0 {
		var pair []byte
		pair, query, _ = bytes.Cut(query, []byte{'&'})
		k, v, _ := bytes.Cut(pair, []byte{'='})
		var kb [maxKey]byte
		n, ok := unescape(kb[:], k)
		if !ok {
			continue
		}
		if p, ok := lookup(kb[:n]); ok {
			raw[p] = v // the last one counts
			o.given |= 1 << p
		}
	}

	var errs field.Errors
	if o.given == 0 {
		return o, errs // the common case: no transformation asked
	}
	var x, y axisParams
	for p := range numParams {
		if o.given&(1<<p) == 0 {
			continue
		}
		if f == PDF && p != pDL {
			errs.Add(paramNames[p], "is not supported for PDF")
			continue
		}
		var vb [maxValue]byte
		n, ok := unescape(vb[:], raw[p])
		v := vb[:n]
		name := paramNames[p]
		switch {
		case ok && n == 0:
			errs.Add(name, "must not be empty")
			continue
		case !ok:
			v = nil // too long: invalid for every parameter
		}
		switch p {
		case pWidth, pHeight:
			n, ok := parseInt(v, MaxSize)
			if !ok {
				errs.Add(name, "must be an integer between 1 and %d (0 means not set)", MaxSize)
			} else if p == pWidth {
				o.Width = int(n)
			} else {
				o.Height = int(n)
			}
		case pDPI:
			n, ok := parseInt(v, MaxDPI)
			if !ok || n < MinDPI {
				errs.Add(name, "must be an integer between %d and %d", MinDPI, MaxDPI)
			} else {
				o.DPI = int(n)
			}
		case pDL:
			switch {
			case oneOf(v, "1", "true", "on"):
				o.Download = true
			case oneOf(v, "0", "false", "off"):
			default:
				errs.Add(name, "must be 1 or 0")
			}
		case pAspect:
			r, ok := parseRatio(v)
			if !ok {
				errs.Add(name, "must be two positive integers up to %d such as 16_9", MaxRatioTerm)
			} else {
				o.Crop.Aspect = r
			}
		case pX1, pX2, pY1, pY2, pCropWidth, pCropHeight:
			l, msg := parseLength(v)
			if msg == "" && (p == pCropWidth || p == pCropHeight) && l.Value == 0 {
				msg = "must be greater than 0"
			}
			if msg != "" {
				errs.Add(name, "%s", msg)
				continue
			}
			switch p {
			case pX1:
				x.start = l
			case pX2:
				x.end = l
			case pY1:
				y.start = l
			case pY2:
				y.end = l
			case pCropWidth:
				x.size = l
			case pCropHeight:
				y.size = l
			}
		case pXOrigin, pYOrigin:
			a, ok := parseAlign(v)
			if !ok {
				errs.Add(name, "must be start, center or end")
			} else if p == pXOrigin {
				x.origin, x.hasOrigin = a, true
			} else {
				y.origin, y.hasOrigin = a, true
			}
		}
	}
	if errs.Any() {
		return Options{}, errs
	}

	aspect := o.Crop.Aspect.W > 0
	x.check(&errs, xNames, aspect)
	y.check(&errs, yNames, aspect)
	if aspect && x.fixed() && y.fixed() {
		errs.Add("aspect_ratio", "cannot be combined with both a crop width (crop_width, or x_1 with x_2) and a crop height (crop_height, or y_1 with y_2)")
	}
	o.Crop.X, o.Crop.Y = x.span(), y.span()
	return o, errs
}

// axisParams are one axis's crop parameters as the query gave them.
type axisParams struct {
	start, end, size Length
	origin           Align
	hasOrigin        bool
}

func (a axisParams) fixed() bool {
	return a.size.set() || (a.start.set() && a.end.set())
}

// axisNames are the parameters of one axis.
type axisNames struct {
	p1, p2, size, origin         string
	pStart, pEnd, pSize, pOrigin param
}

var (
	xNames = axisNames{"x_1", "x_2", "crop_width", "x_origin", pX1, pX2, pCropWidth, pXOrigin}
	yNames = axisNames{"y_1", "y_2", "crop_height", "y_origin", pY1, pY2, pCropHeight, pYOrigin}
)

// check records the combinations that are invalid on every image.
func (a axisParams) check(errs *field.Errors, n axisNames, aspect bool) {
	p1, p2, size, origin := n.p1, n.p2, n.size, n.origin
	if a.hasOrigin && (a.start.set() || a.end.set()) {
		errs.Add(origin, "cannot be combined with %s or %s", p1, p2)
	}
	if a.hasOrigin && !a.size.set() && !aspect {
		errs.Add(origin, "needs %s or aspect_ratio", size)
	}
	if a.start.set() && a.end.set() && a.size.set() {
		errs.Add(size, "cannot be combined with both %s and %s", p1, p2)
	}
	if a.end.set() && a.end.Value == 0 {
		errs.Add(p2, "must be greater than 0")
	} else if a.start.set() && a.end.set() && a.start.Unit == a.end.Unit && a.end.Value <= a.start.Value {
		errs.Add(p2, "must be greater than %s", p1)
	}
	if a.start.Unit == Percent && a.start.Value == Hundred {
		errs.Add(p1, "must be less than 100%%")
	}
}

// span maps the parameters onto a Span: x_1 anchors the crop at the
// start of its region, x_2 at the end, x_origin aligns it otherwise.
func (a axisParams) span() Span {
	s := Span{From: a.start, To: a.end, Size: a.size, Align: a.origin}
	switch {
	case a.start.set() && a.end.set():
		s.Exact = true
	case a.start.set():
		s.Align = AlignStart
	case a.end.set():
		s.Align = AlignEnd
	case !a.hasOrigin:
		s.Align = AlignCenter
	}
	return s
}

// unescape percent-decodes s into dst: "%XX" is a byte, '+' a space, and a
// '%' not followed by two hex digits stands for itself. ok is false when
// the result does not fit.
func unescape(dst, s []byte) (n int, ok bool) {
	for i := 0; i < len(s); i++ {
		if n == len(dst) {
			return n, false
		}
		c := s[i]
		switch {
		case c == '+':
			c = ' '
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			c = unhex(s[i+1])<<4 | unhex(s[i+2])
			i += 2
		}
		dst[n] = c
		n++
	}
	return n, true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// oneOf reports whether v is one of words, ignoring ASCII case.
func oneOf(v []byte, words ...string) bool {
	for _, w := range words {
		if len(v) == len(w) && bytes.EqualFold(v, []byte(w)) {
			return true
		}
	}
	return false
}

// parseInt reads decimal digits (no sign) worth at most max.
func parseInt(v []byte, max int64) (int64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
		if n > max {
			return 0, false
		}
	}
	return n, true
}

// parseRatio reads W_H (or W:H) of positive integers.
func parseRatio(v []byte) (Ratio, bool) {
	i := bytes.IndexAny(v, "_:")
	if i < 0 {
		return Ratio{}, false
	}
	w, ok1 := parseInt(v[:i], MaxRatioTerm)
	h, ok2 := parseInt(v[i+1:], MaxRatioTerm)
	if !ok1 || !ok2 || w == 0 || h == 0 {
		return Ratio{}, false
	}
	return Ratio{W: w, H: h}, true
}

// parseLength reads pixels ("120") or a percentage ("33%", "12.5%"). A
// percentage keeps four decimals, rounding half up on the fifth.
func parseLength(v []byte) (Length, string) {
	const syntax = "must be a number of pixels such as 120 or a percentage such as 33%"
	pct := len(v) > 0 && v[len(v)-1] == '%'
	if !pct {
		n, ok := parseInt(v, MaxPixels)
		if !ok {
			if len(v) > 0 && isDigits(v) {
				return Length{}, "must be at most 1000000 pixels"
			}
			return Length{}, syntax
		}
		return Px(n), ""
	}
	v = v[:len(v)-1]
	whole, frac, dot := bytes.Cut(v, []byte{'.'})
	if len(whole) == 0 || !isDigits(whole) || (dot && (len(frac) == 0 || !isDigits(frac))) {
		return Length{}, syntax
	}
	n, ok := parseInt(whole, 100)
	if !ok {
		return Length{}, "must be at most 100%"
	}
	n *= 10000
	for i, scale := 0, int64(1000); i < len(frac) && i < 5; i, scale = i+1, scale/10 {
		d := int64(frac[i] - '0')
		if i == 4 {
			if d >= 5 {
				n++
			}
			break
		}
		n += d * scale
	}
	if n > Hundred {
		return Length{}, "must be at most 100%"
	}
	return Pct(n), ""
}

func isDigits(v []byte) bool {
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func parseAlign(v []byte) (Align, bool) {
	switch string(v) {
	case "start":
		return AlignStart, true
	case "center":
		return AlignCenter, true
	case "end":
		return AlignEnd, true
	}
	return 0, false
}

// IsParam reports whether name is one of the query parameters Parse reads.
func IsParam(name string) bool {
	_, ok := lookup([]byte(name))
	return ok
}
