package render

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/inspector"
	cdpio "github.com/chromedp/cdproto/io"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/pictorhq/pictor/origin/consent"
	"github.com/pictorhq/pictor/origin/contract/codec"
	"github.com/pictorhq/pictor/origin/egress"
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

// shotTimeout bounds one capture call.
const shotTimeout = 10 * time.Second

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
	blockedBefore := len(t.session.Blocked())
	// A renderer that dies (the memory watchdog killed it, or it crashed)
	// answers nothing more: end the render at once instead of at its
	// deadline.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	crashes := chromedp.Events(ctx, inspector.TargetCrashed)
	go func() {
		for _, err := range crashes {
			if err == nil {
				cancel(e.crashCause())
			}
			return
		}
	}()
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
	return res, nil
}

// classify turns a failure into one of the package's errors. It is the one
// place that decides what a failed main document is: its text is what the
// caller sees, so it names the cause and the host asked for, never an
// address of Pictor's own.
func classify(ctx context.Context, err error) error {
	var le *loadError
	if errors.As(err, &le) {
		return le.classify()
	}
	for _, target := range []error{ErrSelectorNotFound, ErrInvalidSelector, ErrNotReady, ErrBlockedURL, ErrTooLarge, ErrEmpty, ErrUnreachable, ErrTimeout, ErrPageBusy} {
		if errors.Is(err, target) {
			return err
		}
	}
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %v", ErrTimeout, err)
	}
	return fmt.Errorf("%w: %v", ErrBrowser, err)
}

// classify says why the main document did not load: ErrBlockedURL for a
// target the egress refused, ErrTimeout for one that did not answer in
// time, ErrBrowser when the egress itself failed, and ErrUnreachable for
// the rest.
func (e *loadError) classify() error {
	if a := e.answer; a != nil {
		return classifyAnswer(a)
	}
	// The host only: the URL's path and query may hold what the caller
	// would not show to whoever has the image's address.
	host := "the site"
	if u, err := url.Parse(e.url); err == nil && u.Host != "" {
		host = u.Host
	}
	code := strings.TrimPrefix(e.errorText, "net::")
	switch {
	case code == "ERR_PROXY_CONNECTION_FAILED":
		return fmt.Errorf("%w: the egress proxy could not be reached", ErrBrowser)
	case code == "ERR_NAME_NOT_RESOLVED":
		return fmt.Errorf("%w: could not resolve host %s", ErrUnreachable, hostname(host))
	case code == "ERR_CONNECTION_REFUSED":
		return fmt.Errorf("%w: connection refused by %s", ErrUnreachable, host)
	case code == "ERR_CONNECTION_RESET":
		return fmt.Errorf("%w: connection reset by %s", ErrUnreachable, host)
	case code == "ERR_CONNECTION_CLOSED", code == "ERR_EMPTY_RESPONSE":
		return fmt.Errorf("%w: %s closed the connection without answering", ErrUnreachable, host)
	case code == "ERR_TIMED_OUT", code == "ERR_CONNECTION_TIMED_OUT":
		return fmt.Errorf("%w: %s did not answer in time", ErrTimeout, host)
	case code == "ERR_TUNNEL_CONNECTION_FAILED":
		return fmt.Errorf("%w: could not connect to %s", ErrUnreachable, host)
	case strings.HasPrefix(code, "ERR_CERT_"):
		return fmt.Errorf("%w: the TLS certificate of %s is not valid (%s)", ErrUnreachable, host, e.errorText)
	case strings.HasPrefix(code, "ERR_SSL_"), strings.Contains(code, "_TLS_"):
		return fmt.Errorf("%w: the TLS handshake with %s failed (%s)", ErrUnreachable, host, e.errorText)
	case code == "":
		return fmt.Errorf("%w: %s could not be loaded", ErrUnreachable, host)
	}
	return fmt.Errorf("%w: %s could not be loaded (%s)", ErrUnreachable, host, e.errorText)
}

// classifyAnswer says why the egress answered a main document itself.
func classifyAnswer(a *egress.Failure) error {
	host := a.Authority()
	if host == "" {
		host = "the requested host"
	}
	var ae *egress.AddressError
	switch err := a.Err; {
	case err == nil:
		return fmt.Errorf("%w: the request for %s was not relayed", ErrUnreachable, host)
	case errors.Is(err, egress.ErrClosed):
		return fmt.Errorf("%w: the egress session closed", ErrBrowser)
	case errors.As(err, &ae):
		// The range only: the address a name resolves to is the
		// deployment's network, not the caller's business.
		name := hostname(host)
		if !ae.Addr.IsValid() {
			return fmt.Errorf("%w: %s is a %s", ErrBlockedURL, name, ae.Range)
		}
		if _, err := netip.ParseAddr(strings.Trim(name, "[]")); err == nil {
			return fmt.Errorf("%w: %s is a %s address", ErrBlockedURL, name, ae.Range)
		}
		return fmt.Errorf("%w: %s resolves to a %s address", ErrBlockedURL, name, ae.Range)
	case errors.Is(err, egress.ErrBlockedScheme):
		if a.Connect {
			return fmt.Errorf("%w: %s is not served over https", ErrBlockedURL, host)
		}
		return fmt.Errorf("%w: %s is not served to renders", ErrBlockedURL, host)
	case errors.Is(err, egress.ErrInvalidHost):
		if a.Host == "" {
			return fmt.Errorf("%w: its host is not valid", ErrBlockedURL)
		}
		return fmt.Errorf("%w: %s is not a valid host", ErrBlockedURL, host)
	case errors.Is(err, egress.ErrNotServed):
		return fmt.Errorf("%w: %s serves no such document", ErrBlockedURL, hostname(host))
	case errors.Is(err, egress.ErrResolve):
		return fmt.Errorf("%w: could not resolve host %s", ErrUnreachable, hostname(host))
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("%w: connection refused by %s", ErrUnreachable, host)
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return fmt.Errorf("%w: connection reset by %s", ErrUnreachable, host)
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return fmt.Errorf("%w: no route to %s", ErrUnreachable, host)
	case errors.Is(err, context.DeadlineExceeded), os.IsTimeout(err):
		if errors.Is(err, egress.ErrDial) {
			return fmt.Errorf("%w: timed out connecting to %s", ErrTimeout, host)
		}
		return fmt.Errorf("%w: %s did not answer in time", ErrTimeout, host)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: %s closed the connection without answering", ErrUnreachable, host)
	case errors.Is(err, egress.ErrDial):
		return fmt.Errorf("%w: could not connect to %s", ErrUnreachable, host)
	}
	return fmt.Errorf("%w: %s sent no valid answer", ErrUnreachable, host)
}

// hostname is the host of a host:port.
func hostname(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		if strings.IndexByte(h, ':') >= 0 {
			return "[" + h + "]"
		}
		return h
	}
	return hostport
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
	if err := t.emulate(ctx, tg, r); err != nil {
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

	target := r.URL
	if target == "" {
		target = t.serve(buildDocument(r, e.cfg.FontsURL))
	} else if u, err := url.Parse(target); err == nil {
		t.origins[u.Scheme+"://"+u.Host] = true
	}
	t.origins["http://"+InternalHost] = true

	loader, err := navigate(ctx, tg, target, remaining())
	var le *chromedp.LoadError
	if errors.As(err, &le) {
		return nil, docs.failedNavigation(loader, target, le.ErrorText)
	}
	if err != nil {
		return nil, err
	}
	// A page may navigate itself (a form that submits, a location change, a
	// meta refresh) while the steps run: then wait for the new document and
	// run them again, a bounded number of times. The last time, a capture
	// the page replaced by a page of its own stands.
	for attempt := 0; ; attempt++ {
		res, err := e.afterLoad(ctx, tg, r, docs, remaining, fail)
		if errors.Is(err, errReplaced) && attempt == 2 {
			return res, nil
		}
		if err == nil || attempt == 2 || !navigatedAway(err) {
			return res, err
		}
		if err := waitLoad(ctx, tg, remaining(), e.cfg.BusyLimit); err != nil {
			return nil, err
		}
	}
}

// navigatedAway reports a step that failed because the page replaced its
// document. DevTools says so only in its error text.
func navigatedAway(err error) bool {
	if errors.Is(err, errCaptureStalled) || errors.Is(err, errReplaced) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "Execution context was destroyed") ||
		strings.Contains(msg, "Inspected target navigated or closed") ||
		strings.Contains(msg, "Cannot find context with specified id")
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
// both are the same evaluation.
func (e *Engine) afterLoad(ctx context.Context, tg *chromedp.Target, r *Request, docs *documents, remaining func() time.Duration,
	fail context.CancelCauseFunc) (*Result, error) {
	// The steps wait for the page's main thread; a capture or a print may
	// keep it busy for long on a big document, so they are not watched.
	unwatch := watchBusy(ctx, tg, e.cfg.BusyLimit, fail)
	defer unwatch()
	// The document must be the site's (or the caller's HTML, or one it
	// navigated to), not an error page Chromium or the egress made.
	loader, err := docs.check(ctx, tg)
	if err != nil {
		return nil, err
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

	if r.PDF != nil {
		if err := s.run(ctx, tg, nil); err != nil {
			return nil, err
		}
		unwatch()
		res, err := printPDF(ctx, tg, r, e.cfg.MaxPDFBytes)
		if err != nil {
			return nil, err
		}
		res.Settled = settled
		return res, recheck(ctx, tg, docs, loader, remaining())
	}
	clip, err := clipFor(ctx, tg, r, &s)
	if err != nil {
		return nil, err
	}
	unwatch()
	res, err := capture(ctx, tg, r, clip)
	if err != nil {
		return nil, err
	}
	res.Settled = settled
	return res, recheck(ctx, tg, docs, loader, remaining())
}

// recheck looks at the main frame again once the output is taken: a
// navigation the page started before or during it is waited for (within
// wait), and the document it leaves must pass the check too. errReplaced
// says that another document of the site's replaced the checked one.
func recheck(ctx context.Context, tg *chromedp.Target, docs *documents, checked cdp.LoaderID, wait time.Duration) error {
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

// emulation is the state the emulation commands set.
type emulationState struct {
	width, height            int
	scale                    float64
	mobile, landscape, touch bool
	media, scheme, timezone  string
	transparent              bool
}

// emulate applies every emulation setting that differs from what the tab
// has: tabs are reused, and each command costs a relayout.
func (t *tab) emulate(ctx context.Context, tg *chromedp.Target, r *Request) error {
	w, h := r.viewport()
	want := emulationState{width: w, height: h, scale: r.scale(), mobile: r.Mobile, landscape: r.Landscape, touch: r.Touch,
		media: r.MediaType, scheme: r.ColorScheme, timezone: r.Timezone, transparent: r.Transparent}
	have := t.emulation
	t.emulation = nil // unknown until every command succeeded
	if have == nil || have.width != want.width || have.height != want.height || have.scale != want.scale ||
		have.mobile != want.mobile || have.landscape != want.landscape {
		orientation := &emulation.ScreenOrientation{Type: emulation.ScreenOrientationTypePortraitPrimary, Angle: 0}
		if r.Landscape {
			orientation = &emulation.ScreenOrientation{Type: emulation.ScreenOrientationTypeLandscapePrimary, Angle: 90}
		}
		if _, err := cdp.Call(ctx, tg, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
			Width: int64(w), Height: int64(h), DeviceScaleFactor: want.scale, Mobile: r.Mobile,
			ScreenWidth: int64(w), ScreenHeight: int64(h), ScreenOrientation: orientation,
		}); err != nil {
			return err
		}
	}
	if have == nil || have.touch != want.touch {
		touch := emulation.SetTouchEmulationEnabledParams{Enabled: r.Touch}
		if r.Touch {
			touch.MaxTouchPoints = 5
		}
		if _, err := cdp.Call(ctx, tg, emulation.SetTouchEmulationEnabled, touch); err != nil {
			return err
		}
	}
	if have == nil || have.media != want.media || have.scheme != want.scheme {
		media := emulation.SetEmulatedMediaParams{Media: r.MediaType,
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: r.ColorScheme}}}
		if _, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, media); err != nil {
			return err
		}
	}
	if (have == nil && want.timezone != "") || (have != nil && have.timezone != want.timezone) {
		if _, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: r.Timezone}); err != nil {
			return err
		}
	}
	if have == nil || have.transparent != want.transparent {
		// The generated RGBA omits a zero alpha, so this one is sent by hand.
		bg := map[string]any{}
		if r.Transparent {
			bg["color"] = map[string]any{"r": 0, "g": 0, "b": 0, "a": 0}
		}
		if err := tg.Call(ctx, "Emulation.setDefaultBackgroundColorOverride", bg, nil); err != nil {
			return err
		}
	}
	t.emulation = &want
	return nil
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
		data, err := shot(ctx, tg, vp, beyond)
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
		data, err := shot(ctx, tg, &page.Viewport{X: part.X, Y: part.Y, Width: part.Width, Height: part.Height, Scale: 1}, true)
		if err != nil {
			return nil, err
		}
		strips = append(strips, data)
	}
	data, width, height, err := codec.JoinVertical(strips)
	if err != nil {
		return nil, err
	}
	return &Result{Data: data, Width: width, Height: height}, nil
}

// shot captures clip, or the visible viewport when clip is nil.
func shot(ctx context.Context, tg *chromedp.Target, clip *page.Viewport, beyond bool) ([]byte, error) {
	// A capture waits for a frame; a page that is navigating away may never
	// give one, so the wait is bounded.
	sctx, cancel := context.WithTimeout(ctx, shotTimeout)
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

// printPDF prints the document with the PDF options, a PDF of at most
// limit bytes.
func printPDF(ctx context.Context, tg *chromedp.Target, r *Request, limit int64) (*Result, error) {
	o := r.PDF
	params := page.PrintToPDFParams{
		PrintBackground:   new(o.PrintBackground),
		MarginTop:         new(o.Margins[0]),
		MarginRight:       new(o.Margins[1]),
		MarginBottom:      new(o.Margins[2]),
		MarginLeft:        new(o.Margins[3]),
		PreferCSSPageSize: new(false),
	}
	if o.PageWidth > 0 {
		params.PaperWidth = o.PageWidth
	}
	if o.PageHeight > 0 {
		params.PaperHeight = o.PageHeight
	}
	if o.Scale > 0 {
		params.Scale = o.Scale
	}
	// As a stream, read in chunks: a document of a few pages may still make
	// a PDF of hundreds of megabytes (large images), which as one base64
	// reply would sit in memory several times over.
	params.TransferMode = page.PrintToPDFTransferModeReturnAsStream
	res, err := cdp.Call(ctx, tg, page.PrintToPDF, params)
	if err != nil {
		return nil, err
	}
	data, err := readStream(ctx, tg, res.Stream, limit)
	if err != nil {
		return nil, err
	}
	return &Result{Data: data}, nil
}

// pdfChunk is how much of a PDF stream one read asks for.
const pdfChunk = 1 << 20

// readStream reads a DevTools stream to its end, failing with ErrTooLarge
// as soon as it passes limit bytes, and closes it.
func readStream(ctx context.Context, tg *chromedp.Target, handle cdpio.StreamHandle, limit int64) ([]byte, error) {
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		cdp.Call(cctx, tg, cdpio.Close, cdpio.CloseParams{Handle: handle})
	}()
	var buf bytes.Buffer
	for {
		chunk, err := cdp.Call(ctx, tg, cdpio.Read, cdpio.ReadParams{Handle: handle, Size: pdfChunk})
		if err != nil {
			return nil, err
		}
		if int64(buf.Len()+len(chunk.Data)) > limit {
			return nil, fmt.Errorf("%w: the PDF passed %d MiB", ErrTooLarge, limit>>20)
		}
		buf.Write(chunk.Data)
		if chunk.EOF {
			return buf.Bytes(), nil
		}
	}
}

// call runs a JavaScript function with JSON arguments and decodes its
// (awaited) result into out when out is not nil.
func call(ctx context.Context, tg *chromedp.Target, fn string, out any, args ...any) error {
	var s script
	return s.last(fn, args...).run(ctx, tg, out)
}

// script is a sequence of page steps run in one evaluation, one after the
// other, each awaited; the value of the evaluation is the value of the step
// added with last, if any, and those of the steps added with keep.
type script struct {
	b      strings.Builder
	result bool
	kept   []any // where the values of the keep steps go, in order
	err    error // of encoding an argument
}

// expr adds a step that is an expression (its promise is awaited).
func (s *script) expr(e string) *script {
	// Newlines: an expression may end with a line comment.
	s.b.WriteString("await (\n")
	s.b.WriteString(e)
	s.b.WriteString("\n);\n")
	return s
}

// call adds a step that calls the function fn with JSON arguments.
func (s *script) call(fn string, args ...any) *script {
	var b strings.Builder
	b.WriteString("(")
	b.WriteString(fn)
	b.WriteString(")(")
	for i, a := range args {
		if i > 0 {
			b.WriteString(",")
		}
		enc, err := json.Marshal(a)
		if err != nil && s.err == nil {
			s.err = err
		}
		b.Write(enc)
	}
	b.WriteString(")")
	return s.expr(b.String())
}

// last adds the step whose value run decodes into its out.
func (s *script) last(fn string, args ...any) *script {
	s.b.WriteString("__pictorLast = ")
	s.result = true
	return s.call(fn, args...)
}

// keep adds a step whose value run decodes into dst.
func (s *script) keep(dst any, fn string, args ...any) *script {
	fmt.Fprintf(&s.b, "__pictorKept[%d] = ", len(s.kept))
	s.kept = append(s.kept, dst)
	return s.call(fn, args...)
}

// run evaluates the steps, when there are any, and decodes the value of
// the last step into out and those of the keep steps into theirs.
func (s *script) run(ctx context.Context, tg *chromedp.Target, out any) error {
	if s.err != nil {
		return s.err
	}
	if s.b.Len() == 0 {
		return nil
	}
	if len(s.kept) == 0 {
		if !s.result {
			out = nil
		}
		return evaluate(ctx, tg, "(async () => {\nlet __pictorLast;\n"+s.b.String()+"return __pictorLast;\n})()", out)
	}
	var values struct {
		Last json.RawMessage
		Kept []json.RawMessage
	}
	err := evaluate(ctx, tg, "(async () => {\nlet __pictorLast; const __pictorKept = [];\n"+s.b.String()+
		"return { last: __pictorLast, kept: __pictorKept };\n})()", &values)
	if err != nil {
		return err
	}
	if s.result && out != nil && len(values.Last) > 0 {
		if err := json.Unmarshal(values.Last, out); err != nil {
			return err
		}
	}
	for i, dst := range s.kept {
		if i < len(values.Kept) && len(values.Kept[i]) > 0 {
			if err := json.Unmarshal(values.Kept[i], dst); err != nil {
				return err
			}
		}
	}
	return nil
}

// evaluate runs an expression, awaiting a promise, and decodes the value.
func evaluate(ctx context.Context, tg *chromedp.Target, expr string, out any) error {
	res, err := cdp.Call(ctx, tg, runtime.Evaluate, runtime.EvaluateParams{
		Expression: expr, AwaitPromise: new(true), ReturnByValue: new(true),
	})
	if err != nil {
		return err
	}
	if res.ExceptionDetails != nil {
		return fmt.Errorf("%w: script failed: %s", ErrBrowser, res.ExceptionDetails.Text)
	}
	if out == nil || res.Result == nil || len(res.Result.Value) == 0 {
		return nil
	}
	return json.Unmarshal(res.Result.Value, out)
}

// pngSize reads the dimensions from a PNG's IHDR chunk.
func pngSize(data []byte) (int, int, error) {
	if len(data) < 24 || !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) || string(data[12:16]) != "IHDR" {
		return 0, 0, fmt.Errorf("%w: the capture is not a PNG", ErrBrowser)
	}
	return int(binary.BigEndian.Uint32(data[16:20])), int(binary.BigEndian.Uint32(data[20:24])), nil
}
