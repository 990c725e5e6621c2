package render

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/pictorhq/pictor/origin/egress"
)

// fullDocument matches an <html> or <body> tag of the caller's own.
var fullDocument = regexp.MustCompile(`(?i)<(html|body)[\s>/]`)

// IsSnippet reports whether html is a fragment rather than a whole document.
// Snippets are cropped to their content; whole documents use the viewport.
func IsSnippet(html string) bool { return !fullDocument.MatchString(html) }

var headClose = regexp.MustCompile(`(?i)</head\s*>`)
var htmlOpen = regexp.MustCompile(`(?i)<html[^>]*>`)

// buildDocument returns the HTML document a tab loads for r: the caller's
// HTML with the web fonts and CSS added to its head.
func buildDocument(r *Request, fontsURL string) string {
	var head strings.Builder
	if len(r.GoogleFonts) > 0 {
		head.WriteString(`<link rel="stylesheet" href="`)
		head.WriteString(htmlAttrEscape(FontsCSSURL(fontsURL, r.GoogleFonts)))
		head.WriteString(`">`)
	}
	if r.CSS != "" {
		head.WriteString("<style>")
		head.WriteString(r.CSS)
		head.WriteString("</style>")
	}
	if IsSnippet(r.HTML) {
		return `<!DOCTYPE html><html><head><meta charset="utf-8">` + head.String() + "</head><body>" + r.HTML + "</body></html>"
	}
	if head.Len() == 0 {
		return r.HTML
	}
	if loc := headClose.FindStringIndex(r.HTML); loc != nil {
		return r.HTML[:loc[0]] + head.String() + r.HTML[loc[0]:]
	}
	if loc := htmlOpen.FindStringIndex(r.HTML); loc != nil {
		return r.HTML[:loc[1]] + "<head>" + head.String() + "</head>" + r.HTML[loc[1]:]
	}
	return "<head>" + head.String() + "</head>" + r.HTML
}

// FontsCSSURL is the Google Fonts css2 address loading the families, with
// display=block so text waits for its font instead of painting a fallback.
func FontsCSSURL(base string, families []string) string {
	var q strings.Builder
	for _, f := range families {
		q.WriteString("family=")
		q.WriteString(fontsEscaper.Replace(url.QueryEscape(strings.TrimSpace(f))))
		q.WriteString("&")
	}
	q.WriteString("display=block")
	return strings.TrimRight(base, "/") + "/css2?" + q.String()
}

// fontsEscaper keeps the separators of css2 family specs readable.
var fontsEscaper = strings.NewReplacer("%3A", ":", "%3B", ";", "%40", "@", "%2C", ",")

func htmlAttrEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", `"`, "&quot;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// documents follows, during one render, how the main frame's documents
// load: for each navigation (by loader), the URL it ended at, the egress's
// marker when the egress answered it itself, Chromium's network error when
// it failed, and whether it is still under way. check reads it to tell the
// site's document from an error page of Pictor's or Chromium's own making;
// settle waits for the navigations the page started.
type documents struct {
	session *egress.Session
	mark    uint64 // the session's failures before the render
	frame   cdp.FrameID

	mu       sync.Mutex
	loads    map[cdp.LoaderID]*documentLoad
	requests map[network.RequestID]cdp.LoaderID
	order    int
	changed  chan struct{} // closed and replaced when a navigation ends or the frame commits a document
	// seen counts what the main frame did: a navigation started, failed or
	// committed. While it stays the same, the frame shows the document it
	// showed (quiet).
	seen int
	// committed is the loader of the document the main frame committed
	// last during the render, "" before the first.
	committed cdp.LoaderID
}

// documentLoad is one navigation of the main frame.
type documentLoad struct {
	order     int    // when it started, among the render's navigations
	url       string // where it ended, after redirects
	responded bool   // a response arrived: a failure after it leaves the site's (partial) page
	answer    string // the response's egress.AnswerHeader, "" when it has none
	errorText string // Chromium's network error, "" unless it failed
	done      bool   // committed, failed, or replaced by a later navigation
}

// watchDocuments starts following the main frame's loads; it stops when
// ctx ends. Call it before the navigation it must see.
func watchDocuments(ctx context.Context, t *tab) (*documents, error) {
	d := &documents{session: t.session, mark: t.session.Mark(), frame: t.frame,
		loads: map[cdp.LoaderID]*documentLoad{}, requests: map[network.RequestID]cdp.LoaderID{}, changed: make(chan struct{})}
	// Listen, not Events: its calls come in the order of the browser's
	// messages, so a command's reply is never seen before the events
	// that preceded it.
	if err := chromedp.Listen(ctx, d.event); err != nil {
		return nil, err
	}
	return d, nil
}

// event records what a navigation of the main frame did. It runs on the
// tab's reading goroutine and must stay short.
func (d *documents) event(ev any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch ev := ev.(type) {
	case *page.EventFrameStartedNavigating:
		if ev.FrameID != d.frame || ev.LoaderID == "" || ev.NavigationType == page.FrameStartedNavigatingNavigationTypeSameDocument ||
			ev.NavigationType == page.FrameStartedNavigatingNavigationTypeHistorySameDocument {
			return
		}
		d.seen++
		d.start(ev.LoaderID)
	case *network.EventRequestWillBeSent:
		if ev.Type != network.ResourceTypeDocument || ev.FrameID != d.frame {
			return
		}
		d.seen++
		l := d.start(ev.LoaderID)
		l.url = ev.Request.URL // a redirect's next hop comes with the same loader
		d.requests[ev.RequestID] = ev.LoaderID
	case *network.EventResponseReceived:
		if l := d.loads[ev.LoaderID]; l != nil && ev.Type == network.ResourceTypeDocument && ev.FrameID == d.frame {
			l.url, l.responded = ev.Response.URL, true
			l.answer = headerValue(ev.Response.Headers, egress.AnswerHeader)
		}
	case *network.EventLoadingFailed:
		if loader, ok := d.requests[ev.RequestID]; ok && d.loads[loader] != nil {
			d.seen++
			l := d.loads[loader]
			l.errorText = ev.ErrorText
			d.finish(l)
		}
	case *page.EventFrameNavigated:
		if ev.Frame.ParentID != "" {
			return
		}
		d.seen++
		d.committed = ev.Frame.LoaderID
		d.wake()
		cur := d.loads[ev.Frame.LoaderID]
		if cur == nil {
			return
		}
		d.finish(cur)
		// A navigation that started before the committed one can no longer
		// commit: forget it, so a page that navigates in a loop does not
		// grow the record.
		for id, l := range d.loads {
			if l.order < cur.order {
				d.finish(l)
				delete(d.loads, id)
			}
		}
		for id, loader := range d.requests {
			if d.loads[loader] == nil {
				delete(d.requests, id)
			}
		}
	}
}

// start returns the record of a navigation, made when it is new: then
// every earlier navigation still under way is replaced by it.
func (d *documents) start(id cdp.LoaderID) *documentLoad {
	if l := d.loads[id]; l != nil {
		return l
	}
	for _, l := range d.loads {
		d.finish(l)
	}
	d.order++
	l := &documentLoad{order: d.order}
	d.loads[id] = l
	return l
}

// finish marks a navigation as no longer under way.
func (d *documents) finish(l *documentLoad) {
	if !l.done {
		l.done = true
		d.wake()
	}
}

// wake tells the waiters on changed that the frame did something.
func (d *documents) wake() {
	close(d.changed)
	d.changed = make(chan struct{})
}

// quiet returns what the main frame did so far (see seen): while it
// returns the same, the frame shows the same document.
func (d *documents) quiet() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.seen
}

// settle waits, at most wait, until no navigation of the main frame is
// under way: a page that started one before or during the capture shows
// another document, or an error page, once it ends.
func (d *documents) settle(ctx context.Context, wait time.Duration) error {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		d.mu.Lock()
		pending := false
		for _, l := range d.loads {
			pending = pending || !l.done
		}
		changed := d.changed
		d.mu.Unlock()
		if !pending {
			return nil
		}
		select {
		case <-changed:
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// leaving returns a context that ends, with errReplaced as its cause, once
// the main frame commits a document other than shown. A capture under way
// then would show a document that is gone, and when the new one is drawn
// by another renderer (a navigation to another site, in the headless shell
// even without site isolation), it never gets a frame at all. stop ends
// the watch.
func (d *documents) leaving(ctx context.Context, shown cdp.LoaderID) (_ context.Context, stop func()) {
	lctx, cancel := context.WithCancelCause(ctx)
	go func() {
		for {
			d.mu.Lock()
			gone := d.committed != "" && d.committed != shown
			changed := d.changed
			d.mu.Unlock()
			if gone {
				cancel(errReplaced)
				return
			}
			select {
			case <-changed:
			case <-lctx.Done():
				return
			}
		}
	}()
	return lctx, func() { cancel(nil) }
}

// load returns what is known of a navigation.
func (d *documents) load(id cdp.LoaderID) documentLoad {
	d.mu.Lock()
	defer d.mu.Unlock()
	if l := d.loads[id]; l != nil {
		return *l
	}
	return documentLoad{}
}

// check returns a *loadError when the main frame shows no document of the
// site, but Chromium's error page for a navigation that failed or the
// egress's own answer to it (a refusal, an upstream failure, a document the
// internal host does not hold); otherwise the loader of the document it
// shows. A page that loads and shows its own 404 or 500 is a page.
// Subframes are not looked at.
func (d *documents) check(ctx context.Context, tg *chromedp.Target) (cdp.LoaderID, error) {
	tree, err := cdp.Call(ctx, tg, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		return "", err
	}
	f := tree.FrameTree.Frame
	l := d.load(f.LoaderID)
	switch {
	case f.UnreachableURL != "" || strings.HasPrefix(f.URL, "chrome-error:"):
		if l.url == "" {
			l.url = f.UnreachableURL
		}
		return f.LoaderID, d.failed(l)
	case l.errorText != "" && !l.responded:
		return f.LoaderID, d.failed(l)
	case l.answer != "":
		if a, ok := d.session.Answered(l.answer); ok {
			return f.LoaderID, &loadError{url: l.url, answer: &a}
		}
	}
	return f.LoaderID, nil
}

// failedNavigation is the error of a navigation Chromium reported failed.
func (d *documents) failedNavigation(loader cdp.LoaderID, target, errorText string) error {
	l := d.load(loader)
	if l.url == "" {
		l.url = target
	}
	l.errorText = errorText
	return d.failed(l)
}

// failed is the error of a navigation that failed in Chromium. A tunnel
// that failed is explained by the egress, which answered the CONNECT.
func (d *documents) failed(l documentLoad) error {
	le := &loadError{url: l.url, errorText: l.errorText}
	if l.errorText == "net::ERR_TUNNEL_CONNECTION_FAILED" {
		if u, err := url.Parse(l.url); err == nil {
			port := uint16(443)
			if p, err := strconv.ParseUint(u.Port(), 10, 16); err == nil {
				port = uint16(p)
			}
			if a, ok := d.session.Tunnel(u.Hostname(), port, d.mark); ok {
				le.answer = &a
			}
		}
	}
	return le
}

// loadError is a main document that did not load; classify turns it into
// what the caller sees.
type loadError struct {
	url       string          // the document's URL, after redirects
	errorText string          // Chromium's network error, "" when the egress answered
	answer    *egress.Failure // what the egress answered instead, nil when it did not
}

func (e *loadError) Error() string {
	if e.answer != nil && e.answer.Err != nil {
		return fmt.Sprintf("load %s: the egress answered: %v", e.url, e.answer.Err)
	}
	if e.answer != nil {
		return fmt.Sprintf("load %s: the egress answered", e.url)
	}
	return fmt.Sprintf("load %s: %s", e.url, e.errorText)
}

// headerValue reads a header of a DevTools response, whatever its case.
func headerValue(h network.Headers, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			s, _ := v.(string)
			return s
		}
	}
	return ""
}
