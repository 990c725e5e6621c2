package render

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// readyScript runs in every document before the page's own scripts: it
// defines window.ScreenshotReady for render_when_ready.
const readyScript = `(() => {
  let done;
  const ready = new Promise(r => { done = r; });
  Object.defineProperty(window, '__pictorReady', { value: ready });
  window.ScreenshotReady = () => { done(true); };
})();`

// writeScript writes html into the blank document at path and resolves
// true at its load event; it returns false, having done nothing, when the
// tab shows another document. What it calls after the page's scripts
// began to run (they run inside write) is taken beforehand, so a page
// cannot replace it. The URL stays: history.replaceState would cost a
// same-document navigation in the browser, which held the reply ≈ 4 ms.
const writeScript = `(path, html) => {
  if (location.pathname !== path || document.readyState !== 'complete' || document.body === null ||
      document.body.firstChild !== null) return false;
  const d = document, close = Document.prototype.close, on = EventTarget.prototype.addEventListener;
  const state = Object.getOwnPropertyDescriptor(Document.prototype, 'readyState').get;
  d.open();
  d.write(html);
  close.call(d);
  return new Promise(r => {
    if (state.call(d) === 'complete') r(true);
    else on.call(window, 'load', () => r(true), { once: true });
  });
}`

// waitReadyScript resolves true once ScreenshotReady() was called, or false
// after ms milliseconds.
const waitReadyScript = `(ms) => Promise.race([
  window.__pictorReady || new Promise(() => {}),
  new Promise(r => setTimeout(() => r(false), ms)),
])`

// settleScript waits, at most ms milliseconds, for web fonts and for the
// images that matter to the capture, and resolves true when they all
// settled (loaded or failed), false when ms ran out first. Every image that
// is loading is waited for, as it may move what is captured. A
// loading="lazy" image counts only when it lies in the area to capture or
// above it (an image above can push the area down): then it is made eager,
// so Chromium loads it at once whatever its distance from the viewport. A
// lazy image below or beside the area is left alone: Chromium may never
// load it, and its pixels are not captured. The area is measured again
// once fonts are ready and once the images loaded, since both move things;
// new images are taken on for a few rounds.
//
// kind is what becomes the image: "viewport", "page" (up to limit CSS
// pixels, 0 for no limit), "content" (an auto-cropped snippet) or
// "selector" (sel's element); a selector that matches nothing falls back to
// the viewport, and the measurement after this step reports it.
const settleScript = `(ms, kind, sel, limit) => {
  // The area's left and right, and its bottom, in document coordinates.
  const area = () => {
    if (kind === 'page') {
      const h = (` + pageSizeScript + `)().height;
      return { left: -Infinity, right: Infinity, bottom: limit > 0 ? Math.min(limit, h) : h };
    }
    let b = null;
    if (kind === 'selector') { b = (` + selectorBoxScript + `)(sel); if (b && b.invalid) b = null; }
    if (kind === 'content') b = (` + contentBoxScript + `)();
    if (!b) b = { x: scrollX, y: scrollY, width: innerWidth, height: innerHeight };
    return { left: b.x, right: b.x + b.width, bottom: b.y + b.height };
  };
  const counts = (i, a) => {
    if (i.getClientRects().length === 0) return false; // not rendered: Chromium does not load it
    const c = i.getBoundingClientRect();
    return c.top + scrollY <= a.bottom && c.left + scrollX <= a.right && c.right + scrollX >= a.left;
  };
  const waited = new Set();
  const take = () => {
    const a = area();
    let added = 0;
    for (const i of document.images) {
      if (i.complete || waited.has(i)) continue;
      if (i.loading === 'lazy') {
        if (!counts(i, a)) continue;
        i.loading = 'eager';
      }
      waited.add(i);
      added++;
    }
    return added;
  };
  const settled = i => new Promise(r => {
    i.addEventListener('load', r, { once: true });
    i.addEventListener('error', r, { once: true });
    if (i.complete) r();
  });
  let timer;
  const out = new Promise(r => { timer = setTimeout(() => r(false), ms); });
  take();
  const work = (async () => {
    if (document.fonts) await document.fonts.ready;
    take();
    for (let round = 0; ; round++) {
      await Promise.all(Array.from(waited, settled));
      if (round === 3 || take() === 0) break;
    }
    clearTimeout(timer);
    return true;
  })();
  return Promise.race([work, out]);
}`

// scrollScript scrolls to the bottom a screen at a time, so lazy content
// loads, and back to the top.
const scrollScript = `async (limit) => {
  const pause = () => new Promise(r => requestAnimationFrame(() => setTimeout(r, 30)));
  for (let y = 0; y < document.documentElement.scrollHeight && y < limit; y += window.innerHeight) {
    window.scrollTo(0, y);
    await pause();
  }
  window.scrollTo(0, 0);
  await pause();
}`

// styleScript adds a stylesheet to the loaded page (URL renders).
const styleScript = `(css) => {
  const s = document.createElement('style');
  s.textContent = css;
  (document.head || document.documentElement).appendChild(s);
}`

// linkScript adds a stylesheet link and waits for it to load or fail.
const linkScript = `(href) => new Promise(r => {
  const l = document.createElement('link');
  l.rel = 'stylesheet'; l.href = href;
  l.onload = l.onerror = r;
  (document.head || document.documentElement).appendChild(l);
})`

// contentBoxScript returns the box, in document coordinates, of everything
// in the body: each top-level element with its margins, and top-level text.
const contentBoxScript = `() => {
  const b = document.body;
  if (!b) return null;
  let l = Infinity, t = Infinity, r = -Infinity, btm = -Infinity;
  const add = (x1, y1, x2, y2) => {
    if (x2 <= x1 || y2 <= y1) return;
    l = Math.min(l, x1); t = Math.min(t, y1); r = Math.max(r, x2); btm = Math.max(btm, y2);
  };
  for (const n of b.childNodes) {
    if (n.nodeType === 1) {
      const s = getComputedStyle(n);
      if (s.display === 'none') continue;
      const c = n.getBoundingClientRect();
      add(c.left - parseFloat(s.marginLeft), c.top - parseFloat(s.marginTop),
          c.right + parseFloat(s.marginRight), c.bottom + parseFloat(s.marginBottom));
    } else if (n.nodeType === 3 && n.textContent.trim() !== '') {
      const rg = document.createRange();
      rg.selectNodeContents(n);
      const c = rg.getBoundingClientRect();
      add(c.left, c.top, c.right, c.bottom);
    }
  }
  if (l === Infinity) return null;
  const x = Math.max(0, Math.floor(l + window.scrollX)), y = Math.max(0, Math.floor(t + window.scrollY));
  return { x, y, width: Math.ceil(r + window.scrollX) - x, height: Math.ceil(btm + window.scrollY) - y };
}`

// selectorBoxScript returns the box of the first element matching sel,
// {invalid: true} for a bad selector, or null when nothing matches.
const selectorBoxScript = `(sel) => {
  let e;
  try { e = document.querySelector(sel); } catch (err) { return { invalid: true }; }
  if (!e) return null;
  const c = e.getBoundingClientRect();
  const x = Math.max(0, Math.floor(c.left + window.scrollX)), y = Math.max(0, Math.floor(c.top + window.scrollY));
  return { x, y, width: Math.ceil(c.right + window.scrollX) - x, height: Math.ceil(c.bottom + window.scrollY) - y };
}`

// pageSizeScript returns the scrollable size of the document.
const pageSizeScript = `() => ({
  width: Math.max(document.documentElement.scrollWidth, document.body ? document.body.scrollWidth : 0),
  height: Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0),
})`

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
