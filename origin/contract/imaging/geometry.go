package imaging

import (
	"fmt"
	"net/http"

	"github.com/pictorhq/pictor/origin/contract/apierr"
)

// rect is a pixel rectangle.
type rect struct{ X, Y, W, H int }

// rect resolves the crop on a w×h image. A crop past the image's edges or
// an empty one is an ErrCropOutOfBounds 400 naming the parameters at fault;
// given is Options.given (0 for hand-built options).
func (c Crop) rect(w, h int, given uint16) (rect, error) {
	r, bad := c.resolve(w, h)
	if bad == nil {
		return r, nil
	}
	n, dim := xNames, w
	if bad.y {
		n, dim = yNames, h
	}
	return rect{}, bad.span.outOfBounds(n, given, bad.derived, dim, bad.lo, bad.hi)
}

// badAxis says why resolve failed: the crop spans [lo, hi) on the x or y
// axis, whose size came from the aspect ratio when derived.
type badAxis struct {
	y       bool
	span    Span
	derived bool
	lo, hi  int64
}

func (c Crop) resolve(w, h int) (rect, *badAxis) {
	xlo, xhi := c.X.region(w)
	ylo, yhi := c.Y.region(h)
	if xlo < 0 || xhi > int64(w) || xlo >= xhi {
		return rect{}, &badAxis{span: c.X, lo: xlo, hi: xhi}
	}
	if ylo < 0 || yhi > int64(h) || ylo >= yhi {
		return rect{}, &badAxis{y: true, span: c.Y, lo: ylo, hi: yhi}
	}
	cw, fixW := c.X.size(w, xlo, xhi)
	ch, fixH := c.Y.size(h, ylo, yhi)
	a := c.Aspect
	aspect := a.W > 0 && a.H > 0
	if aspect {
		switch {
		case fixW && fixH:
			// Over-determined; Parse refuses it. The sizes win.
		case fixW:
			ch = divRound(cw*a.H, a.W)
		case fixH:
			cw = divRound(ch*a.W, a.H)
		default:
			// The largest a.W:a.H box inside the region.
			rw, rh := xhi-xlo, yhi-ylo
			if rw*a.H >= rh*a.W {
				ch, cw = rh, divRound(rh*a.W, a.H)
			} else {
				cw, ch = rw, divRound(rw*a.H, a.W)
			}
		}
	}
	if cw < 1 || cw > xhi-xlo {
		return rect{}, &badAxis{span: c.X, derived: aspect && !fixW, lo: xlo, hi: xlo + cw}
	}
	if ch < 1 || ch > yhi-ylo {
		return rect{}, &badAxis{y: true, span: c.Y, derived: aspect && !fixH, lo: ylo, hi: ylo + ch}
	}
	return rect{
		X: int(c.X.place(xlo, xhi, cw)), Y: int(c.Y.place(ylo, yhi, ch)),
		W: int(cw), H: int(ch),
	}, nil
}

// region is [From, To) in pixels.
func (s Span) region(dim int) (lo, hi int64) {
	lo, hi = 0, int64(dim)
	if s.From.set() {
		lo = s.From.px(dim)
	}
	if s.To.set() {
		hi = s.To.px(dim)
	}
	return lo, hi
}

// size is the crop's size when the span fixes it, else the whole region.
func (s Span) size(dim int, lo, hi int64) (n int64, fixed bool) {
	switch {
	case s.Exact:
		return hi - lo, true
	case s.Size.set():
		return s.Size.px(dim), true
	}
	return hi - lo, false
}

// place returns where a crop of n pixels starts in [lo, hi). A centered
// crop that cannot be centered exactly leans to the start.
func (s Span) place(lo, hi, n int64) int64 {
	switch {
	case s.Exact || s.Align == AlignStart:
		return lo
	case s.Align == AlignEnd:
		return hi - n
	}
	return lo + (hi-lo-n)/2
}

// outOfBounds is the 400 for a crop that spans [lo, hi) on an axis of dim
// pixels. It names the axis's parameters the query gave, and aspect_ratio
// when the size came from it (derived).
func (s Span) outOfBounds(n axisNames, given uint16, derived bool, dim int, lo, hi int64) error {
	axis, side := "x", "width"
	if n == yNames {
		axis, side = "y", "height"
	}
	msg := fmt.Sprintf("the crop spans %s %d to %d: outside the image's %s of %d pixels, or empty", axis, lo, hi, side, dim)
	var paths []string
	if given != 0 {
		for _, p := range []param{n.pStart, n.pEnd, n.pSize, n.pOrigin} {
			if given&(1<<p) != 0 {
				paths = append(paths, paramNames[p])
			}
		}
	} else {
		// Hand-built options: name what the span holds.
		if s.From.set() {
			paths = append(paths, n.p1)
		}
		if s.To.set() {
			paths = append(paths, n.p2)
		}
		if s.Size.set() {
			paths = append(paths, n.size)
		}
	}
	if derived || len(paths) == 0 {
		paths = append(paths, "aspect_ratio")
	}
	e := &apierr.Error{
		Status:  http.StatusBadRequest,
		Message: "Invalid request: " + paths[0] + " " + msg,
		Cause:   ErrCropOutOfBounds,
	}
	for _, p := range paths {
		e.Fields = append(e.Fields, apierr.FieldError{Path: p, Message: msg})
	}
	return e
}

// divRound is a/b rounded half up, for non-negative operands.
func divRound(a, b int64) int64 { return (2*a + b) / (2 * b) }

// target returns the size of the result for a w×h crop, and whether both
// sides were asked (cover and center-crop). A result that only keeps the
// aspect ratio is at least 1 pixel on each side.
func (o Options) target(w, h int) (tw, th int, cover bool) {
	switch {
	case o.Width > 0 && o.Height > 0:
		return o.Width, o.Height, true
	case o.Width > 0:
		return o.Width, int(max(1, divRound(int64(h)*int64(o.Width), int64(w)))), false
	case o.Height > 0:
		return int(max(1, divRound(int64(w)*int64(o.Height), int64(h)))), o.Height, false
	}
	return w, h, false
}

// check rejects hand-built options that Parse would not have produced in
// range. Parse's own errors are more precise; this guards Apply.
func (o Options) check() error {
	var bad string
	switch {
	case o.Width < 0 || o.Width > MaxSize:
		bad = "width"
	case o.Height < 0 || o.Height > MaxSize:
		bad = "height"
	case o.DPI != 0 && (o.DPI < MinDPI || o.DPI > MaxDPI):
		bad = "dpi"
	case o.Crop.Aspect.W < 0 || o.Crop.Aspect.H < 0 || o.Crop.Aspect.W > MaxRatioTerm || o.Crop.Aspect.H > MaxRatioTerm:
		bad = "aspect_ratio"
	case !o.Crop.X.inRange():
		bad = "x"
	case !o.Crop.Y.inRange():
		bad = "y"
	}
	if bad != "" {
		return fmt.Errorf("%w: %s out of range", ErrUnsupported, bad)
	}
	return nil
}

func (s Span) inRange() bool {
	return s.From.inRange() && s.To.inRange() && s.Size.inRange() && s.Align <= AlignEnd
}

func (l Length) inRange() bool {
	switch l.Unit {
	case Unset:
		return true
	case Pixels:
		return l.Value >= 0 && l.Value <= MaxPixels
	case Percent:
		return l.Value >= 0 && l.Value <= Hundred
	}
	return false
}
