package baseline

import "errors"

// ErrPuppeteer is a failure of the Puppeteer process itself (it exited,
// or wrote what the harness cannot read), not of one render.
var ErrPuppeteer = errors.New("puppeteer")
