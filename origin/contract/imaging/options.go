package imaging

import "strconv"

// Limits of the query parameters.
const (
	// MaxSize bounds width and height, and both sides of a resized result.
	MaxSize = 5000
	// MinDPI and MaxDPI bound dpi.
	MinDPI, MaxDPI = 30, 600
	// MaxPixels bounds a crop coordinate or size given in pixels. Larger
	// images do not exist; Apply reports what falls outside a real image.
	MaxPixels = 1_000_000
	// MaxRatioTerm bounds each side of aspect_ratio.
	MaxRatioTerm = 100_000
	// Hundred is 100% as a Percent Length's Value.
	Hundred = 1_000_000
)

// Unit is how a Length is measured.
type Unit uint8

// Units; the zero Length is Unset.
const (
	Unset Unit = iota
	Pixels
	Percent
)

// Length is a crop coordinate or size.
type Length struct {
	// Value is pixels, or for Percent millionths of the image's dimension
	// along the axis (1% is 10000, 100% is Hundred).
	Value int64
	Unit  Unit
}

// Px returns a length of n pixels.
func Px(n int64) Length { return Length{Value: n, Unit: Pixels} }

// Pct returns a length of millionths of the image's dimension: Pct(Hundred/3).
func Pct(millionths int64) Length { return Length{Value: millionths, Unit: Percent} }

func (l Length) set() bool { return l.Unit != Unset }

// px resolves l on an axis of dim pixels; percentages round half up.
func (l Length) px(dim int) int64 {
	if l.Unit == Percent {
		return (l.Value*int64(dim) + Hundred/2) / Hundred
	}
	return l.Value
}

// Align places a crop smaller than its region.
type Align uint8

// Alignments; the zero value is centered.
const (
	AlignCenter Align = iota
	AlignStart
	AlignEnd
)

// Span is the crop along one axis. It is more general than the query:
// Parse maps x_1 to From (aligned at the start), x_2 to To (aligned at the
// end), crop_width to Size and x_origin to Align.
type Span struct {
	// From and To bound the region the crop lies in; unset From is 0,
	// unset To is the full dimension.
	From, To Length
	// Size is the crop's size. Unset: the whole region, or with an aspect
	// ratio the size derived from it.
	Size Length
	// Exact makes the crop the whole region and fixes its size for the
	// aspect ratio (x_1 with x_2 under aspect_ratio).
	Exact bool
	// Align places a crop smaller than the region.
	Align Align
}

// Ratio is an aspect ratio W:H; the zero Ratio is none.
type Ratio struct{ W, H int64 }

// Crop is the region kept before resizing; the zero Crop keeps everything.
type Crop struct {
	Aspect Ratio
	X, Y   Span
}

// Options are the transformations of one GET. The zero Options transform
// nothing. Parse returns them in canonical form; Key, IsIdentity and Apply
// canonicalize hand-built Options the same way. Compare options by Key, not
// with ==: Parse also records which parameters it saw, for Apply's errors.
type Options struct {
	// Width and Height are the result's size, 1 to MaxSize; 0 is not set.
	// One alone keeps the aspect ratio; both cover the box and crop it
	// centered.
	Width, Height int
	// DPI, 30 to 600, is written as density metadata (PNG pHYs, JPEG JFIF);
	// 0 writes none of its own.
	DPI int
	// Download asks for Content-Disposition: attachment. It does not change
	// the bytes, so Key leaves it out.
	Download bool
	// Crop is applied before the resize.
	Crop Crop

	// given records which query parameters Parse saw (bit 1<<param), so
	// that errors found by Apply name them. It is not part of the key.
	given uint16
}

// IsIdentity reports that the options leave pixels and metadata as stored:
// the master is served as is (still converted when another format is asked).
func (o Options) IsIdentity() bool {
	o = o.canonical()
	return o.Width <= 0 && o.Height <= 0 && o.DPI == 0 && o.Crop == Crop{}
}

// canonical rewrites o into the one form shared by every equivalent set of
// options. Each rule holds for every image size, so two options with the
// same canonical form give the same bytes.
func (o Options) canonical() Options {
	if o.Crop == (Crop{}) {
		return o // only the crop has more than one spelling
	}
	a := o.Crop.Aspect
	if a.W > 0 && a.H > 0 {
		g := gcd(a.W, a.H)
		a = Ratio{a.W / g, a.H / g}
	} else {
		a = Ratio{}
	}
	o.Crop.Aspect = a
	o.Crop.X = o.Crop.X.canonical(a.W > 0)
	o.Crop.Y = o.Crop.Y.canonical(a.W > 0)
	return o
}

func (s Span) canonical(aspect bool) Span {
	if s.From.set() && s.From.Value == 0 {
		s.From = Length{} // 0 px and 0% are both the near edge
	}
	if s.To.Unit == Percent && s.To.Value == Hundred {
		s.To = Length{} // 100% is the far edge
	}
	if s.Exact {
		s.Size = Length{}
	}
	if s.Size.set() && s.sizeIsRegion() {
		s.Size, s.Exact = Length{}, true
	}
	if !s.From.set() && s.To.set() && (s.Exact || (!aspect && !s.Size.set())) {
		// [0, To) taken whole is a crop of size To at the start.
		s.Size, s.To, s.Exact, s.Align = s.To, Length{}, false, AlignStart
	}
	if !aspect {
		// Without an aspect ratio an open size is the whole region already.
		s.Exact = false
	}
	if s.Exact || (!s.Size.set() && !aspect) {
		s.Align = AlignCenter // the crop fills its region: nothing to align
	}
	return s
}

// sizeIsRegion reports that Size equals To−From on every image. Only exact
// identities count: (b−a)% of an image is not always round(b%)−round(a%)
// pixels, so percentages are compared only against a region starting at 0.
func (s Span) sizeIsRegion() bool {
	z := s.Size
	switch {
	case !s.From.set() && !s.To.set():
		return z.Unit == Percent && z.Value == Hundred
	case !s.From.set():
		return z == s.To
	case s.From.Unit == Pixels && s.To.Unit == Pixels:
		return z.Unit == Pixels && z.Value == s.To.Value-s.From.Value
	}
	return false
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// Key appends a canonical name of the options to dst, without allocating
// when dst has room: equivalent options append the same bytes, different
// canonical options different bytes. It appends nothing for options that
// transform nothing. Neither the format nor Download is part of it.
//
// Key is the same for every spelling of the same transformation (order,
// defaults spelled out, 0 px and 0%, 100% and the far edge, 32_18 and 16_9)
// and different for anything that can change a pixel on some image: a
// centered 50% crop and x_1=25%&x_2=75% differ by rounding, so they keep
// different keys. It leaves out the format and dl: the edge's cache key is
// the image id (lower case), the Format ParseFormat reads from the
// extension (".PNG" and no extension are png, ".JPEG" is jpg) and Key.
func (o Options) Key(dst []byte) []byte {
	o = o.canonical()
	start := len(dst)
	sep := func(dst []byte, name string) []byte {
		if len(dst) > start {
			dst = append(dst, '&')
		}
		return append(append(dst, name...), '=')
	}
	if o.Width > 0 {
		dst = strconv.AppendInt(sep(dst, "w"), int64(o.Width), 10)
	}
	if o.Height > 0 {
		dst = strconv.AppendInt(sep(dst, "h"), int64(o.Height), 10)
	}
	if o.DPI != 0 {
		dst = strconv.AppendInt(sep(dst, "dpi"), int64(o.DPI), 10)
	}
	c := o.Crop
	if c.Aspect.W > 0 {
		dst = strconv.AppendInt(sep(dst, "ar"), c.Aspect.W, 10)
		dst = strconv.AppendInt(append(dst, ':'), c.Aspect.H, 10)
	}
	if c.X != (Span{}) {
		dst = c.X.appendKey(sep(dst, "x"))
	}
	if c.Y != (Span{}) {
		dst = c.Y.appendKey(sep(dst, "y"))
	}
	return dst
}

// appendKey writes [From]:[To][/Size|/exact][@start|@end].
func (s Span) appendKey(dst []byte) []byte {
	if s.From.set() || s.To.set() {
		dst = appendLength(dst, s.From)
		dst = appendLength(append(dst, ':'), s.To)
	}
	switch {
	case s.Exact:
		dst = append(dst, "/exact"...)
	case s.Size.set():
		dst = appendLength(append(dst, '/'), s.Size)
	}
	switch s.Align {
	case AlignStart:
		dst = append(dst, "@start"...)
	case AlignEnd:
		dst = append(dst, "@end"...)
	}
	return dst
}

func appendLength(dst []byte, l Length) []byte {
	switch l.Unit {
	case Pixels:
		return strconv.AppendInt(dst, l.Value, 10)
	case Percent:
		dst = strconv.AppendInt(dst, l.Value/10000, 10)
		if frac := l.Value % 10000; frac != 0 {
			dst = append(dst, '.')
			for d := int64(1000); frac != 0; d /= 10 {
				dst = append(dst, byte('0'+frac/d))
				frac %= d
			}
		}
		return append(dst, '%')
	}
	return dst
}

// suffixChars maps the punctuation of Key to characters that are safe in
// an object key and that Key itself never writes, one for one, so Suffix
// is as unambiguous as Key.
var suffixChars = [256]byte{'&': '_', '=': '-', ':': '~', '/': '!', '@': '+', '%': 'p'}

// Suffix appends the name of the options in an object key, after an
// image's id: "_w-400" for width=400, "_w-400_h-300" for both sides,
// "_x-10~200!100+start" for a crop. Equivalent options append the same
// bytes, different ones different bytes; options that transform nothing
// append nothing.
func (o Options) Suffix(dst []byte) []byte {
	start := len(dst)
	dst = o.Key(dst)
	if len(dst) == start {
		return dst
	}
	dst = append(dst[:start+1], dst[start:]...)
	dst[start] = '_'
	for i := start + 1; i < len(dst); i++ {
		if c := suffixChars[dst[i]]; c != 0 {
			dst[i] = c
		}
	}
	return dst
}
