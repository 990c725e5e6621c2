package render

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// headerRule decides which headers a request of a render gets.
type headerRule struct {
	r         *Request
	requested string          // the origin of the URL of a URL render
	allowed   map[string]bool // origins that get r.Headers
}

func newHeaderRule(r *Request) headerRule {
	h := headerRule{r: r, allowed: map[string]bool{}}
	if u, err := url.Parse(r.URL); err == nil {
		h.requested = originOf(u)
		h.allowed[h.requested] = true
	}
	for _, o := range r.HeaderOrigins {
		h.allowed[strings.ToLower(strings.TrimRight(o, "/"))] = true
	}
	return h
}

// subrequests reports whether requests other than documents get headers,
// in which case every frame's requests are intercepted.
func (h headerRule) subrequests() bool { return h.r.HeadersOnSubrequests && len(h.r.Headers) > 0 }

// headers returns the headers a request goes on with: its own, plus the
// custom headers when its origin is allowed and it is the top-level
// request (the main frame's document, redirects included) or
// HeadersOnSubrequests is set, plus X-SERVICE-SCREENSHOT on the top-level
// request of the URL's own origin.
func (h headerRule) headers(rawURL string, own map[string]any, top bool) []*fetch.HeaderEntry {
	out := make([]*fetch.HeaderEntry, 0, len(own)+len(h.r.Headers)+1)
	for k, v := range own {
		out = append(out, &fetch.HeaderEntry{Name: k, Value: fmt.Sprint(v)})
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return out
	}
	if top && h.r.IdentifyAsService && originOf(u) == h.requested {
		out = append(out, &fetch.HeaderEntry{Name: "X-SERVICE-SCREENSHOT", Value: "1"})
	}
	if h.allowed[originOf(u)] && (top || h.r.HeadersOnSubrequests) {
		for k, v := range h.r.Headers {
			out = append(out, &fetch.HeaderEntry{Name: k, Value: v})
		}
	}
	return out
}

// interceptHeaders adds the custom headers to requests of the allowed
// origins (the top-level request only, unless HeadersOnSubrequests) and
// X-SERVICE-SCREENSHOT to the top-level request. With HeadersOnSubrequests
// the requests of cross-site iframes, which site isolation runs in renderer
// processes (and DevTools targets) of their own, are intercepted through
// frameInterceptor.
func interceptHeaders(ctx context.Context, tg *chromedp.Target, r *Request) (stop func(), err error) {
	rule := newHeaderRule(r)
	tree, err := cdp.Call(ctx, tg, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		return nil, err
	}
	mainFrame := tree.FrameTree.Frame.ID
	lctx, cancel := context.WithCancel(ctx)
	paused := chromedp.Events(lctx, fetch.RequestPaused)
	patterns := []*fetch.RequestPattern{{URLPattern: "*", ResourceType: network.ResourceTypeDocument}}
	if rule.subrequests() {
		patterns = []*fetch.RequestPattern{{URLPattern: "*"}}
	}
	var frames *frameInterceptor
	if rule.subrequests() {
		if frames, err = startFrameInterceptor(lctx, tg, rule); err != nil {
			cancel()
			return nil, err
		}
	}
	if _, err := cdp.Call(ctx, tg, fetch.Enable, fetch.EnableParams{Patterns: patterns}); err != nil {
		cancel()
		if frames != nil {
			frames.stop(context.WithoutCancel(ctx))
		}
		return nil, err
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for ev, err := range paused {
			if err != nil || lctx.Err() != nil {
				return
			}
			top := ev.ResourceType == network.ResourceTypeDocument && ev.FrameID == mainFrame
			cdp.Call(lctx, tg, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID,
				Headers: rule.headers(ev.Request.URL, ev.Request.Headers, top)})
		}
	})
	return func() {
		cancel()
		bctx := context.WithoutCancel(ctx)
		cdp.Call(bctx, tg, fetch.Disable, cdp.Empty{})
		if frames != nil {
			frames.stop(bctx)
		}
		wg.Wait()
	}, nil
}

func originOf(u *url.URL) string {
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if port != "" {
		host += ":" + port
	}
	return strings.ToLower(u.Scheme) + "://" + host
}

// frameInterceptor intercepts the requests of the targets attached below a
// page: cross-site iframes (at any depth) and workers. chromedp drives
// flat sessions but does not attach to iframe targets, and a flat session
// cannot be addressed through it; so the page is told to auto-attach its
// children as nested sessions, paused until they are set up, and every
// message to and from them travels inside Target.sendMessageToTarget and
// Target.receivedMessageFromTarget on the page's own session. Each child
// gets Fetch interception with the rule's headers (none is a top-level
// request) and the same auto-attach for its own children, then runs.
type frameInterceptor struct {
	tg   *chromedp.Target
	rule headerRule

	mu       sync.Mutex
	next     int64
	sessions [][]target.SessionID // every attached child, as its path of sessions from the page
	done     chan struct{}
}

// childMessage is a message from a child session: a reply (ID set, with
// Result or Error) or an event (Method and Params).
type childMessage struct {
	ID     int64           `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// childCommand is command id of a child session, as the message that
// Target.sendMessageToTarget carries.
func childCommand(id int64, method string, params any) (string, error) {
	msg, err := json.Marshal(struct {
		ID     int64  `json:"id"`
		Method string `json:"method"`
		Params any    `json:"params,omitempty"`
	}{id, method, params})
	return string(msg), err
}

type childPaused struct {
	RequestID string `json:"requestId"`
	Request   struct {
		URL     string         `json:"url"`
		Headers map[string]any `json:"headers"`
	} `json:"request"`
}

type childAttached struct {
	SessionID target.SessionID `json:"sessionId"`
}

type childReceived struct {
	SessionID target.SessionID `json:"sessionId"`
	Message   string           `json:"message"`
}

// startFrameInterceptor makes tg auto-attach its children as nested
// sessions and intercepts their requests until ctx ends; stop restores
// chromedp's auto-attach.
func startFrameInterceptor(ctx context.Context, tg *chromedp.Target, rule headerRule) (*frameInterceptor, error) {
	f := &frameInterceptor{tg: tg, rule: rule, done: make(chan struct{})}
	attached := chromedp.Events(ctx, target.AttachedToTarget)
	received := chromedp.Events(ctx, target.ReceivedMessageFromTarget)
	go func() {
		defer close(f.done)
		var wg sync.WaitGroup
		wg.Go(func() {
			for ev, err := range attached {
				if err != nil {
					return
				}
				f.setUp(ctx, []target.SessionID{ev.SessionID})
			}
		})
		for ev, err := range received {
			if err != nil {
				break
			}
			f.receive(ctx, []target.SessionID{ev.SessionID}, ev.Message)
		}
		wg.Wait()
	}()
	if _, err := cdp.Call(ctx, tg, target.SetAutoAttach, target.SetAutoAttachParams{
		AutoAttach: true, WaitForDebuggerOnStart: true, Flatten: new(false),
	}); err != nil {
		return nil, err
	}
	return f, nil
}

// receive handles a message of the child at path.
func (f *frameInterceptor) receive(ctx context.Context, path []target.SessionID, raw string) {
	var m childMessage
	if json.Unmarshal([]byte(raw), &m) != nil || m.ID != 0 {
		return // a reply: nothing waits for one
	}
	switch m.Method {
	case "Fetch.requestPaused":
		var ev childPaused
		if json.Unmarshal(m.Params, &ev) != nil {
			return
		}
		f.send(ctx, path, "Fetch.continueRequest", map[string]any{
			"requestId": ev.RequestID,
			"headers":   f.rule.headers(ev.Request.URL, ev.Request.Headers, false),
		})
	case "Target.attachedToTarget":
		var ev childAttached
		if json.Unmarshal(m.Params, &ev) == nil {
			f.setUp(ctx, append(path[:len(path):len(path)], ev.SessionID))
		}
	case "Target.receivedMessageFromTarget":
		var ev childReceived
		if json.Unmarshal(m.Params, &ev) == nil {
			f.receive(ctx, append(path[:len(path):len(path)], ev.SessionID), ev.Message)
		}
	}
}

// setUp intercepts a new child's requests, lets it attach its own
// children the same way, and lets it run. A session processes its messages
// in order, so no request of the child starts before its interception.
func (f *frameInterceptor) setUp(ctx context.Context, path []target.SessionID) {
	f.mu.Lock()
	f.sessions = append(f.sessions, path)
	f.mu.Unlock()
	f.send(ctx, path, "Fetch.enable", map[string]any{"patterns": []map[string]string{{"urlPattern": "*"}}})
	f.send(ctx, path, "Target.setAutoAttach", map[string]any{"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": false})
	f.send(ctx, path, "Runtime.runIfWaitingForDebugger", nil)
}

// send sends a command to the child at path, wrapped once per level.
func (f *frameInterceptor) send(ctx context.Context, path []target.SessionID, method string, params any) {
	f.mu.Lock()
	f.next++
	id := f.next
	f.mu.Unlock()
	msg, err := childCommand(id, method, params)
	if err != nil {
		return
	}
	for i := len(path) - 1; i > 0; i-- {
		if msg, err = childCommand(id, "Target.sendMessageToTarget", map[string]any{"sessionId": path[i], "message": msg}); err != nil {
			return
		}
	}
	// The page's own session: chromedp's generated params have no
	// sendMessageToTarget, so it is sent by name.
	f.tg.Call(ctx, "Target.sendMessageToTarget", map[string]any{"sessionId": path[0], "message": msg}, nil)
}

// stop releases what the children hold paused, detaches them and gives the
// page back chromedp's auto-attach (flat sessions, nothing paused), which
// later renders on the tab rely on. ctx must outlive the render's.
func (f *frameInterceptor) stop(ctx context.Context) {
	f.mu.Lock()
	sessions := f.sessions
	f.sessions = nil
	f.mu.Unlock()
	for _, path := range sessions {
		f.send(ctx, path, "Fetch.disable", nil)
	}
	cdp.Call(ctx, f.tg, target.SetAutoAttach, target.SetAutoAttachParams{AutoAttach: true, Flatten: new(true)})
	for _, path := range sessions {
		if len(path) == 1 {
			cdp.Call(ctx, f.tg, target.DetachFromTarget, target.DetachFromTargetParams{SessionID: path[0]})
		}
	}
	<-f.done
}
