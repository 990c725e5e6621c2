// Package render turns a Request into pixels or a PDF with a real headless
// Chromium: one long-lived browser (restarted after a number of renders or
// when it dies), a pool of tabs, a bounded queue, and a deadline per render.
// Every request a tab makes goes through its own egress session, so no
// render can reach an address the egress policy refuses. Where a render's
// time goes, and what was tried to cut it, is in docs/render-performance.md.
package render
