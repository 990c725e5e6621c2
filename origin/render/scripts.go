package render

// readyScript runs in every document before the page's own scripts: it
// defines window.ScreenshotReady for render_when_ready.
const readyScript = `(() => {
  let done;
  const ready = new Promise(r => { done = r; });
  Object.defineProperty(window, '__pictorReady', { value: ready });
  window.ScreenshotReady = () => { done(true); };
})();`

// waitReadyScript resolves true once ScreenshotReady() was called, or false
// after ms milliseconds.
const waitReadyScript = `(ms) => Promise.race([
  window.__pictorReady || new Promise(() => {}),
  new Promise(r => setTimeout(() => r(false), ms)),
])`

// settleScript waits, at most ms milliseconds, for web fonts and images.
const settleScript = `(ms) => Promise.race([
  Promise.all([
    document.fonts ? document.fonts.ready : null,
    ...Array.from(document.images).filter(i => !i.complete)
      .map(i => new Promise(r => { i.addEventListener('load', r); i.addEventListener('error', r); })),
  ]),
  new Promise(r => setTimeout(r, ms)),
]).then(() => true)`

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
