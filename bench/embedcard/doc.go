// Package embedcard serves the embed card of the render-isolation
// scenario: a 1200×630 social card on 127.0.0.1 with iframes of posts from
// 127.0.0.2, .3 and .4, one site each to Chromium, all on one port. It
// counts the pages it served per tag, so a run can tell whether every
// iframe loaded.
package embedcard
