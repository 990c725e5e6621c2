package render

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// What drawFrames found for one cross-site frame: the outcome label of
// pictor_render_frame_waits_total.
const (
	frameDrawn     = "drawn"     // it drew what it holds
	frameHidden    = "hidden"    // not rendered: display:none, visibility:hidden, or inside such a frame
	frameOffscreen = "offscreen" // outside the viewport, where Chromium stops drawing it
	frameTimedOut  = "timeout"   // it did not draw within the wait: captured as it is
	frameGone      = "gone"      // it went away, could not be asked, or its page broke the script
)

// drawScript resolves once the frame drew what it holds now: the second
// animation frame callback runs after the first one's frame was drawn.
// Chromium stops drawing a frame outside the viewport, so that one
// resolves at its first intersection observation instead.
var drawScript = fmt.Sprintf(`new Promise(done => {
	const root = document.documentElement;
	const io = new IntersectionObserver(([e]) => { if (!e.isIntersecting) { io.disconnect(); done(%q) } });
	if (root) io.observe(root);
	requestAnimationFrame(() => requestAnimationFrame(() => { io.disconnect(); done(%q) }));
})`, frameOffscreen, frameDrawn)

// ownerScript tells whether a frame's iframe element is rendered: a frame
// whose element is not draws nothing.
const ownerScript = `function() { return this.checkVisibility({visibilityProperty: true}) }`

// drawFrames waits, at most wait, until every cross-site frame of the page
// in tg that shows has drawn what it holds. Site isolation runs such a
// frame in a renderer of its own, on its own time: a capture of the page
// takes what the frame drew last, and a frame that had not drawn yet came
// out white. A frame that is not rendered, or lies outside the viewport,
// draws nothing and is not waited for; past wait the page is captured as
// it is. It returns how many frames ended each way.
func drawFrames(ctx context.Context, tg *chromedp.Target, wait time.Duration) map[string]int {
	infos, err := chromedp.CallBrowser(ctx, target.GetTargets, target.GetTargetsParams{})
	if err != nil {
		return nil
	}
	kids := map[target.ID][]target.ID{}
	for _, info := range infos.TargetInfos {
		if info.Type == "iframe" && info.ParentID != "" {
			kids[info.ParentID] = append(kids[info.ParentID], info.TargetID)
		}
	}
	if len(kids[tg.TargetID]) == 0 {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	w := &frameWait{s: newFrameSessions(wctx), kids: kids, outcomes: map[string]int{}}
	defer w.s.detach(ctx)
	var wg sync.WaitGroup
	for _, id := range kids[tg.TargetID] {
		wg.Go(func() { w.visit(wctx, tg.Call, id) })
	}
	wg.Wait()
	return w.outcomes
}

// caller sends one command to a target and decodes its reply into res.
type caller func(ctx context.Context, method string, params, res any) error

// frameWait is one drawFrames.
type frameWait struct {
	s    *frameSessions
	kids map[target.ID][]target.ID

	mu       sync.Mutex
	outcomes map[string]int
}

func (w *frameWait) count(id target.ID, outcome string, subtree bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var add func(target.ID)
	add = func(id target.ID) {
		w.outcomes[outcome]++
		if subtree {
			for _, kid := range w.kids[id] {
				add(kid)
			}
		}
	}
	add(id)
}

// visit waits for frame id, whose iframe element parent reaches, and for
// the frames inside it, which are asked about while it draws.
func (w *frameWait) visit(ctx context.Context, parent caller, id target.ID) {
	ended := func() string {
		if ctx.Err() != nil {
			return frameTimedOut
		}
		return frameGone
	}
	shown, err := ownerShown(ctx, parent, id)
	if err != nil {
		w.count(id, ended(), true)
		return
	}
	if !shown {
		w.count(id, frameHidden, true)
		return
	}
	session, err := w.s.attach(ctx, id)
	if err != nil {
		w.count(id, ended(), true)
		return
	}
	call := func(ctx context.Context, method string, params, res any) error {
		return w.s.call(ctx, session, method, params, res)
	}
	var wg sync.WaitGroup
	for _, kid := range w.kids[id] {
		wg.Go(func() { w.visit(ctx, call, kid) })
	}
	var reply struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	err = call(ctx, "Runtime.evaluate", map[string]any{
		"expression":    drawScript,
		"awaitPromise":  true,
		"returnByValue": true,
	}, &reply)
	switch {
	case err != nil:
		w.count(id, ended(), false)
	case reply.Result.Value == frameDrawn || reply.Result.Value == frameOffscreen:
		w.count(id, reply.Result.Value, false)
	default: // the page broke the script (an exception): nothing to wait on
		w.count(id, frameGone, false)
	}
	wg.Wait()
}

// ownerShown tells whether the iframe element of frame id, in the target
// parent reaches, is rendered.
func ownerShown(ctx context.Context, parent caller, id target.ID) (bool, error) {
	var owner struct {
		BackendNodeID int64 `json:"backendNodeId"`
	}
	if err := parent(ctx, "DOM.getFrameOwner", map[string]any{"frameId": id}, &owner); err != nil {
		return false, err
	}
	var node struct {
		Object struct {
			ObjectID string `json:"objectId"`
		} `json:"object"`
	}
	if err := parent(ctx, "DOM.resolveNode", map[string]any{"backendNodeId": owner.BackendNodeID}, &node); err != nil {
		return false, err
	}
	// Once the wait is over the object is left to the document, which the
	// tab's reset ends: a release then could wait on a busy page.
	defer parent(ctx, "Runtime.releaseObject", map[string]any{"objectId": node.Object.ObjectID}, nil)
	var shown struct {
		Result struct {
			Value bool `json:"value"`
		} `json:"result"`
	}
	err := parent(ctx, "Runtime.callFunctionOn", map[string]any{
		"objectId": node.Object.ObjectID, "functionDeclaration": ownerScript, "returnByValue": true,
	}, &shown)
	return shown.Result.Value, err
}

// frameSessions talks to frames through sessions the browser attaches
// without flattening, since chromedp routes flat sessions only to targets
// of its own: each command travels inside Target.sendMessageToTarget, each
// reply inside the browser's Target.receivedMessageFromTarget, where it is
// known by its session and id.
type frameSessions struct {
	b *chromedp.Browser

	mu       sync.Mutex
	next     int64
	waiting  map[frameCall]chan childMessage
	sessions []target.SessionID
}

type frameCall struct {
	session target.SessionID
	id      int64
}

// newFrameSessions routes replies until ctx ends.
func newFrameSessions(ctx context.Context) *frameSessions {
	s := &frameSessions{b: chromedp.FromContext(ctx).Browser, waiting: map[frameCall]chan childMessage{}}
	replies := chromedp.BrowserEvents(ctx, target.ReceivedMessageFromTarget) // before any command
	go func() {
		for ev, err := range replies {
			if err != nil {
				return
			}
			var r childMessage
			if json.Unmarshal([]byte(ev.Message), &r) != nil || r.ID == 0 {
				continue // an event
			}
			s.mu.Lock()
			ch := s.waiting[frameCall{ev.SessionID, r.ID}]
			s.mu.Unlock()
			if ch != nil {
				ch <- r
			}
		}
	}()
	return s
}

func (s *frameSessions) attach(ctx context.Context, id target.ID) (target.SessionID, error) {
	res, err := chromedp.CallBrowser(ctx, target.AttachToTarget, target.AttachToTargetParams{TargetID: id, Flatten: new(false)})
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	s.sessions = append(s.sessions, res.SessionID)
	s.mu.Unlock()
	return res.SessionID, nil
}

// call sends method to the target of session and decodes the reply's
// result into res, when not nil.
func (s *frameSessions) call(ctx context.Context, session target.SessionID, method string, params, res any) error {
	s.mu.Lock()
	s.next++
	key := frameCall{session, s.next}
	ch := make(chan childMessage, 1)
	s.waiting[key] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.waiting, key)
		s.mu.Unlock()
	}()
	msg, err := childCommand(key.id, method, params)
	if err != nil {
		return err
	}
	// chromedp's generated params have no sendMessageToTarget: sent by name.
	if err := s.b.Call(ctx, "Target.sendMessageToTarget", map[string]any{"sessionId": session, "message": msg}, nil); err != nil {
		return err
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return errors.New(r.Error.Message)
		}
		if res == nil {
			return nil
		}
		return json.Unmarshal(r.Result, res)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// detach ends every session attach made; the frames stay.
func (s *frameSessions) detach(ctx context.Context) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	s.mu.Lock()
	sessions := s.sessions
	s.sessions = nil
	s.mu.Unlock()
	for _, session := range sessions {
		chromedp.CallBrowser(dctx, target.DetachFromTarget, target.DetachFromTargetParams{SessionID: session})
	}
}
