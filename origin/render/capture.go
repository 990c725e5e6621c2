package render

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/pictorhq/pictor/origin/consent"
	"github.com/pictorhq/pictor/origin/contract/imaging"
	"github.com/pictorhq/pictor/origin/twemoji"
)

// box is a rectangle in CSS pixels of the document.
type box struct {
	X, Y, Width, Height float64
	Invalid             bool `json:"invalid"`
	// Viewport asks for the visible viewport as the page shows it (a mobile
	// page may be zoomed out), captured without a clip.
	Viewport bool `json:"-"`
}

// shotTimeout bounds one capture call of a small area. Past it the page is
// taken to give no frame (it is replacing its document) and the steps run
// again, so a large capture gets more time: shotWait.
const shotTimeout = 10 * time.Second

// shotWait is how long a capture of pixels device pixels may take: a
// 16-megapixel strip takes a second on an idle core and five or more
// beside other work, all of it before the reply. Were that taken for a
// stall, the steps and every strip would run again, for nothing.
func shotWait(pixels float64) time.Duration {
	return shotTimeout + time.Duration(pixels/1e6*float64(time.Second))
}

// watchBusy asks the page for a trivial value every second and ends the
// render through fail with ErrPageBusy when one answer does not come
// within limit: a script that never yields (for (;;) {}) would
// otherwise hold the tab until the render's deadline. Every step before
// the capture awaits the page without blocking its thread, so a page that
// is only slow (loading, waiting for fonts, ScreenshotReady) still answers.
// The returned stop ends the watch; it may be called more than once.
func watchBusy(ctx context.Context, tg *chromedp.Target, limit time.Duration, fail context.CancelCauseFunc) (stop func()) {
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-tick.C:
			}
			pctx, pcancel := context.WithTimeout(wctx, limit)
			_, err := cdp.Call(pctx, tg, runtime.Evaluate, runtime.EvaluateParams{Expression: "0"})
			stuck := err != nil && wctx.Err() == nil && pctx.Err() != nil
			pcancel()
			if stuck {
				fail(fmt.Errorf("%w for %v", ErrPageBusy, limit))
				return
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// errCaptureStalled is a capture that got no frame, as when the page is
// replacing its document.
var errCaptureStalled = errors.New("the capture got no frame")

// maxTile is the tallest strip, in device pixels, one capture takes, and
// maxShotPixels the largest area: larger outputs are captured in strips
// and joined. A strip of random pixels is a PNG of 4 bytes a pixel, which
// the browser sends in one reply, base64-encoded: 16 megapixels are 90 MB
// of it.
const (
	maxTile       = 8192
	maxShotPixels = 16 << 20
)

// render runs r in the tab. The caller bounds ctx.
func (e *Engine) render(ctx context.Context, t *tab, r *Request) (*Result, error) {
	if err := t.useRoute(ctx, r.Upstream); err != nil {
		return nil, err
	}
	blockedBefore, mark := len(t.session.Blocked()), t.session.Mark()
	// A renderer that dies (the memory watchdog killed it, or it crashed)
	// answers nothing more: end the render at once instead of at its
	// deadline.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	e.endOnCrash(ctx, cancel)
	docs, err := watchDocuments(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("%w: watch the page: %v", ErrBrowser, err)
	}
	var res *Result
	err = chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		var err error
		res, err = e.run(ctx, t, tg, r, docs, cancel)
		return err
	}))
	if cause := context.Cause(ctx); errors.Is(cause, ErrCrashed) || errors.Is(cause, ErrPageMemory) || errors.Is(cause, ErrPageBusy) {
		return nil, cause
	}
	if res != nil {
		for _, b := range t.session.Blocked()[blockedBefore:] {
			res.Blocked = append(res.Blocked, b.Target)
		}
	}
	if err != nil {
		return nil, classify(ctx, err)
	}
	if pe, ok := t.session.ProxyFailure(mark); ok && r.Upstream != nil {
		// The main document loaded, something else of the page did not:
		// not the page asked for, and the proxy's fault, not the site's.
		return nil, fmt.Errorf("%w: part of the page could not be loaded through proxy %s: %s", ErrUnreachable, pe.Proxy, pe.Reason)
	}
	return res, nil
}

// errReplaced is a capture the page replaced: it committed another document
// while it was taken.
var errReplaced = errors.New("the page replaced its document during the capture")

func (e *Engine) run(ctx context.Context, t *tab, tg *chromedp.Target, r *Request, docs *documents, fail context.CancelCauseFunc) (*Result, error) {
	deadline := time.Now().Add(r.MaxWait)
	remaining := func() time.Duration {
		if d := time.Until(deadline); d > 0 {
			return d
		}
		return 0
	}
	emulated, err := t.emulate(ctx, tg, r)
	if err != nil {
		return nil, err
	}
	if r.BlockConsent {
		var patterns []*network.BlockPattern
		for _, p := range consent.BlockPatterns() {
			patterns = append(patterns, &network.BlockPattern{URLPattern: p, Block: true})
		}
		if _, err := cdp.Call(ctx, tg, network.SetBlockedURLs, network.SetBlockedURLsParams{URLPatterns: patterns}); err != nil {
			return nil, err
		}
		defer cdp.Call(context.WithoutCancel(ctx), tg, network.SetBlockedURLs, network.SetBlockedURLsParams{URLPatterns: []*network.BlockPattern{}})
	}
	if len(r.Headers) > 0 || r.IdentifyAsService {
		stop, err := interceptHeaders(ctx, tg, r)
		if err != nil {
			return nil, err
		}
		defer stop()
	}

	// An HTML render is written into the blank document when the tab
	// shows one made under the emulation this render asks for: the
	// document then takes its URL, where the internal host serves it from
	// now on. Otherwise it is served at a URL of its own and navigated to.
	blank := t.blank
	t.blank = blankPage{}
	t.origins["http://"+InternalHost] = true
	target := r.URL
	if target == "" {
		html := buildDocument(r, e.cfg.FontsURL)
		if blank.loader == "" || !emulated {
			target = t.serveAt(newToken(), html)
		} else {
			target = t.serveAt(blank.token, html)
			wrote, err := write(ctx, tg, docPath(blank.token), html, remaining())
			if err != nil {
				return nil, err
			}
			if wrote {
				return e.steps(ctx, t, tg, r, docs, remaining, fail, blank.loader)
			}
		}
	} else if u, err := url.Parse(target); err == nil {
		t.origins[u.Scheme+"://"+u.Host] = true
	}

	loader, err := navigate(ctx, tg, target, remaining())
	var le *chromedp.LoadError
	if errors.As(err, &le) {
		return nil, docs.failedNavigation(loader, target, le.ErrorText)
	}
	if err != nil {
		return nil, err
	}
	return e.steps(ctx, t, tg, r, docs, remaining, fail, "")
}

// steps runs the page steps and the capture on the loaded document. A page
// may navigate itself (a form that submits, a location change, a meta
// refresh) while they run: then it waits for the new document and runs
// them again, a bounded number of times. The last time, a capture the page
// replaced by a page of its own stands; before, a capture is given up as
// soon as the page commits another document. shown is the loader of the
// document written into the frame, "" when it was navigated to.
func (e *Engine) steps(ctx context.Context, t *tab, tg *chromedp.Target, r *Request, docs *documents, remaining func() time.Duration,
	fail context.CancelCauseFunc, shown cdp.LoaderID) (*Result, error) {
	for attempt := 0; ; attempt++ {
		last := attempt == 2
		res, err := e.afterLoad(ctx, t, tg, r, docs, remaining, fail, shown, last)
		shown = ""
		if errors.Is(err, errCaptureStalled) {
			e.metrics.stalls.Inc()
		}
		if errors.Is(err, errReplaced) && last {
			return res, nil
		}
		if err == nil || last || !navigatedAway(err) {
			return res, err
		}
		if err := waitLoad(ctx, tg, remaining(), e.cfg.BusyLimit); err != nil {
			return nil, err
		}
	}
}

// navigatedAway reports a step that failed because the page replaced its
// document. DevTools says so only in its error text. "Not attached to an
// active page" answers a command sent while a navigation swaps the frame's
// renderer: seen in the headless shell when a form written into the blank
// document submits itself to another site.
func navigatedAway(err error) bool {
	if errors.Is(err, errCaptureStalled) || errors.Is(err, errReplaced) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "Execution context was destroyed") ||
		strings.Contains(msg, "Inspected target navigated or closed") ||
		strings.Contains(msg, "Cannot find context with specified id") ||
		strings.Contains(msg, "Not attached to an active page")
}

// waitLoad waits, at most wait, for the document that replaced the
// previous one to finish loading; a page that answers nothing for busy
// fails with ErrPageBusy.
func waitLoad(ctx context.Context, tg *chromedp.Target, wait, busy time.Duration) error {
	lctx, cancel := context.WithTimeout(ctx, max(wait, 500*time.Millisecond))
	defer cancel()
	loaded := chromedp.Events(lctx, page.LoadEventFired) // before the check, so no load is missed
	// A page whose scripts hold its main thread answers neither a capture
	// (no frame) nor this question: past busy it is given up on.
	qctx, qcancel := context.WithTimeout(ctx, busy)
	defer qcancel()
	var complete bool
	err := call(qctx, tg, `() => document.readyState === 'complete'`, &complete)
	if err != nil && qctx.Err() != nil && ctx.Err() == nil {
		return fmt.Errorf("%w: it answered nothing for %v", ErrPageBusy, busy)
	}
	if err == nil && complete {
		return nil
	}
	if err != nil && !navigatedAway(err) {
		return err
	}
	return firstEvent(ctx, loaded)
}

// firstEvent waits for the first event of events, which ends with the
// context it was subscribed with: when that context ran out before ctx, the
// wait is over and the page is captured as it is.
func firstEvent[E any](ctx context.Context, events iter.Seq2[E, error]) error {
	for _, err := range events {
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return nil
	}
	return ctx.Err()
}

// afterLoad runs the steps between the load of the document and the
// capture. The page-side steps go to the page in as few evaluations as the
// options allow, since each is a round trip: one for everything before
// render_when_ready, ms_delay and full_screen's scrolling, and one that
// waits for fonts and images and measures the clip. Without those options
// both are the same evaluation. Unless last, the capture (or the print)
// ends with errReplaced once the page commits another document.
func (e *Engine) afterLoad(ctx context.Context, t *tab, tg *chromedp.Target, r *Request, docs *documents, remaining func() time.Duration,
	fail context.CancelCauseFunc, shown cdp.LoaderID, last bool) (*Result, error) {
	// The steps wait for the page's main thread; a capture or a print may
	// keep it busy for long on a big document, so they are not watched.
	unwatch := watchBusy(ctx, tg, e.cfg.BusyLimit, fail)
	defer unwatch()
	// The document must be the site's (or the caller's HTML, or one it
	// navigated to), not an error page Chromium or the egress made. The
	// caller's HTML written into the blank document is, while the main
	// frame did nothing since (a failed or committed navigation is seen
	// before the reply of the write that preceded it).
	seen := docs.quiet()
	loader := shown
	if shown == "" || seen != 0 {
		var err error
		if loader, err = docs.check(ctx, tg); err != nil {
			return nil, err
		}
	}
	var s script
	if r.URL != "" {
		if r.CSS != "" {
			s.call(styleScript, r.CSS)
		}
		if len(r.GoogleFonts) > 0 {
			s.call(linkScript, FontsCSSURL(e.cfg.FontsURL, r.GoogleFonts))
		}
	}
	if r.BlockConsent {
		host := ""
		if u, err := url.Parse(r.URL); err == nil {
			host = u.Hostname()
		}
		if css := consent.CSS(host); css != "" {
			s.call(styleScript, css)
		}
		s.expr(consent.Script())
	}
	if r.Twemoji {
		s.expr(twemoji.Script("http://" + InternalHost))
	}
	if r.WhenReady || r.Delay > 0 || r.FullPage {
		if err := s.run(ctx, tg, nil); err != nil {
			return nil, err
		}
		s = script{}
	}
	if r.WhenReady {
		var ready bool
		if err := call(ctx, tg, waitReadyScript, &ready, remaining().Milliseconds()); err != nil {
			return nil, err
		}
		if !ready {
			return nil, ErrNotReady
		}
	}
	if r.Delay > 0 {
		select {
		case <-time.After(r.Delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	scale := r.scale()
	if r.FullPage {
		s.call(scrollScript, float64(r.MaxHeight)/scale)
	}
	// Fonts and images get what is left of max_wait, and no more: once it
	// is spent the page is captured as it is.
	var settled bool
	kind, limit := r.area()
	s.keep(&settled, settleScript, remaining().Milliseconds(), kind, r.Selector, limit)

	octx, stop := ctx, func() {}
	if !last {
		octx, stop = docs.leaving(ctx, loader)
	}
	defer stop()
	if r.PDF != nil {
		if err := s.run(ctx, tg, nil); err != nil {
			return nil, err
		}
		unwatch()
		e.loaded(t)
		res, err := printPDF(octx, tg, r, e.cfg.MaxPDFBytes)
		if err != nil {
			return nil, outputErr(ctx, octx, err)
		}
		res.Settled = settled
		return res, recheck(ctx, tg, docs, loader, seen, remaining())
	}
	clip, err := clipFor(ctx, tg, r, &s)
	if err != nil {
		return nil, err
	}
	if e.cfg.SiteIsolation {
		for outcome, n := range drawFrames(ctx, tg, min(remaining(), e.cfg.BusyLimit)) {
			e.metrics.frameWaits.WithLabelValues(outcome).Add(float64(n))
		}
	}
	unwatch()
	e.loaded(t)
	res, err := capture(octx, tg, r, clip)
	if err != nil {
		return nil, outputErr(ctx, octx, err)
	}
	res.Settled = settled
	return res, recheck(ctx, tg, docs, loader, seen, remaining())
}

// outputErr is the error of a capture or a print under octx, a context of
// ctx that documents.leaving may have ended.
func outputErr(ctx, octx context.Context, err error) error {
	if cause := context.Cause(octx); errors.Is(cause, errReplaced) && ctx.Err() == nil {
		return cause
	}
	return err
}

// recheck looks at the main frame again once the output is taken: a
// navigation the page started before or during it is waited for (within
// wait), and the document it leaves must pass the check too. errReplaced
// says that another document of the site's replaced the checked one.
// When the frame did nothing since the check (seen is what docs.quiet
// said before it), up to the capture's reply, the checked document is the
// one captured.
func recheck(ctx context.Context, tg *chromedp.Target, docs *documents, checked cdp.LoaderID, seen int, wait time.Duration) error {
	if docs.quiet() == seen {
		return nil
	}
	if err := docs.settle(ctx, wait); err != nil {
		return err
	}
	loader, err := docs.check(ctx, tg)
	if err != nil {
		return err
	}
	if loader != checked {
		return errReplaced
	}
	return nil
}

// area says which part of the document becomes the image, for the settle
// step (settleScript): the same choice as clipFor's, and the whole document
// for a PDF. limit is a full page's height limit in CSS pixels, 0 for none.
func (r *Request) area() (kind string, limit float64) {
	switch {
	case r.PDF != nil:
		return "page", 0
	case r.Selector != "":
		return "selector", 0
	case r.FullPage:
		return "page", float64(r.MaxHeight) / r.scale()
	case r.autoCrop():
		return "content", 0
	}
	return "viewport", 0
}

// navigate loads target and waits for its load event, at most wait: then
// the page is captured as it is, since max_wait_ms caps waiting. A document
// that never started loading is an error.
func navigate(ctx context.Context, tg *chromedp.Target, target string, wait time.Duration) (cdp.LoaderID, error) {
	lctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	loaded := chromedp.Events(lctx, page.LoadEventFired)
	// Page.navigate returns once the document's response arrives: a site
	// that sends none within the wait fails the render then (504), not at
	// its deadline.
	nctx := lctx
	if wait <= 0 {
		nctx = ctx
	}
	res, err := cdp.Call(nctx, tg, page.Navigate, page.NavigateParams{URL: target})
	if err != nil && nctx.Err() != nil && ctx.Err() == nil {
		return "", fmt.Errorf("%w: no response within max_wait_ms", ErrTimeout)
	}
	if err != nil {
		return "", err
	}
	if res.ErrorText != "" {
		return res.LoaderID, &chromedp.LoadError{ErrorText: res.ErrorText}
	}
	return res.LoaderID, firstEvent(ctx, loaded)
}

// write puts an HTML render's document into the tab's blank document, as
// a warm page's setContent does, instead of navigating to it: a navigation
// costs about 25 ms more to the load event, and the first frame of a new
// document makes the capture slower (docs/render-performance.md). The
// blank document is at path already (loadBlank), where the internal host
// now serves html, so relative URLs and a reload resolve as after a
// navigation; its window is new, nothing ran in it but the document-start
// script. It waits, at most wait, for the load event; then the page is
// captured as it is. It reports false, having changed nothing, when the
// tab does not show the blank document (the render navigates then).
func write(ctx context.Context, tg *chromedp.Target, path, html string, wait time.Duration) (bool, error) {
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var wrote bool
	err := call(wctx, tg, writeScript, &wrote, path, html)
	switch {
	case err != nil && wctx.Err() != nil && ctx.Err() == nil:
		return true, nil // max_wait_ms ran out while it loaded
	case err != nil && navigatedAway(err):
		return true, nil // the page went elsewhere as it loaded: the steps wait for it
	case err != nil:
		return false, err
	}
	return wrote, nil
}

// clipFor decides which part of the document becomes the image. The
// measurement is the last step of s, which it runs.
func clipFor(ctx context.Context, tg *chromedp.Target, r *Request, s *script) (box, error) {
	w, h := r.viewport()
	switch {
	case r.Selector != "":
		var b *box
		if err := s.last(selectorBoxScript, r.Selector).run(ctx, tg, &b); err != nil {
			return box{}, err
		}
		if b == nil {
			return box{}, fmt.Errorf("%w: %q", ErrSelectorNotFound, r.Selector)
		}
		if b.Invalid {
			return box{}, fmt.Errorf("%w: %q", ErrInvalidSelector, r.Selector)
		}
		if b.Width < 1 || b.Height < 1 {
			return box{}, fmt.Errorf("%w: %q has no size", ErrEmpty, r.Selector)
		}
		return *b, nil
	case r.FullPage:
		var size box
		if err := s.last(pageSizeScript).run(ctx, tg, &size); err != nil {
			return box{}, err
		}
		return box{Width: float64(w), Height: math.Max(size.Height, float64(h))}, nil
	case r.autoCrop():
		var b *box
		if err := s.last(contentBoxScript).run(ctx, tg, &b); err != nil {
			return box{}, err
		}
		if b == nil || b.Width < 1 || b.Height < 1 {
			return box{}, ErrEmpty
		}
		return *b, nil
	}
	if err := s.run(ctx, tg, nil); err != nil {
		return box{}, err
	}
	return box{Width: float64(w), Height: float64(h), Viewport: true}, nil
}

// capture takes the clip as PNG, in strips when it is taller than one
// capture can be, and cuts it to the output limits.
func capture(ctx context.Context, tg *chromedp.Target, r *Request, clip box) (*Result, error) {
	scale := r.scale()
	if r.MaxWidth > 0 && clip.Width*scale > float64(r.MaxWidth) {
		if r.Selector != "" || r.FullPage {
			clip.Width = math.Floor(float64(r.MaxWidth) / scale)
		} else {
			return nil, fmt.Errorf("%w: %.0f px wide, the limit is %d", ErrTooLarge, clip.Width*scale, r.MaxWidth)
		}
	}
	if r.MaxHeight > 0 && clip.Height*scale > float64(r.MaxHeight) {
		clip.Height = math.Floor(float64(r.MaxHeight) / scale)
	}
	if rows := math.Floor(float64(r.MaxPixels) / (clip.Width * scale)); r.MaxPixels > 0 && clip.Height*scale > rows {
		clip.Height = math.Floor(rows / scale)
	}
	vw, vh := r.viewport()
	beyond := clip.X+clip.Width > float64(vw) || clip.Y+clip.Height > float64(vh)
	// A strip is at most maxTile rows and maxShotPixels in all, so no one
	// reply of the browser is larger than that bitmap's PNG.
	stripCSS := math.Max(1, math.Floor(math.Min(maxTile, math.Floor(maxShotPixels/(clip.Width*scale)))/scale))
	if clip.Height <= stripCSS {
		var vp *page.Viewport
		if !clip.Viewport {
			vp = &page.Viewport{X: clip.X, Y: clip.Y, Width: clip.Width, Height: clip.Height, Scale: 1}
		}
		data, err := shot(ctx, tg, vp, beyond, clip.Width*clip.Height*scale*scale)
		if err != nil {
			return nil, err
		}
		width, height, err := pngSize(data)
		if err != nil {
			return nil, err
		}
		return &Result{Data: data, Width: width, Height: height}, nil
	}
	var strips [][]byte
	for y := clip.Y; y < clip.Y+clip.Height; y += stripCSS {
		part := box{X: clip.X, Y: y, Width: clip.Width, Height: math.Min(stripCSS, clip.Y+clip.Height-y)}
		data, err := shot(ctx, tg, &page.Viewport{X: part.X, Y: part.Y, Width: part.Width, Height: part.Height, Scale: 1}, true,
			part.Width*part.Height*scale*scale)
		if err != nil {
			return nil, err
		}
		strips = append(strips, data)
	}
	data, width, height, err := imaging.JoinVertical(strips)
	if err != nil {
		return nil, err
	}
	return &Result{Data: data, Width: width, Height: height}, nil
}

// shot captures clip, or the visible viewport when clip is nil: pixels
// device pixels.
func shot(ctx context.Context, tg *chromedp.Target, clip *page.Viewport, beyond bool, pixels float64) ([]byte, error) {
	// A capture waits for a frame; a page that is navigating away may never
	// give one, so the wait is bounded.
	sctx, cancel := context.WithTimeout(ctx, shotWait(pixels))
	defer cancel()
	res, err := cdp.Call(sctx, tg, page.CaptureScreenshot, page.CaptureScreenshotParams{
		Format:                page.CaptureScreenshotFormatPng,
		Clip:                  clip,
		CaptureBeyondViewport: new(beyond),
		OptimizeForSpeed:      new(true),
	})
	if err != nil && ctx.Err() == nil && sctx.Err() != nil {
		return nil, errCaptureStalled
	}
	if err != nil {
		return nil, err
	}
	return res.Data, nil
}

// pngSize reads the dimensions from a PNG's IHDR chunk.
func pngSize(data []byte) (int, int, error) {
	if len(data) < 24 || !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) || string(data[12:16]) != "IHDR" {
		return 0, 0, fmt.Errorf("%w: the capture is not a PNG", ErrBrowser)
	}
	return int(binary.BigEndian.Uint32(data[16:20])), int(binary.BigEndian.Uint32(data[20:24])), nil
}
