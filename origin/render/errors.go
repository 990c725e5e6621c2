package render

import "errors"

// Failures a render can end with. The image service maps them to statuses:
// the first group is the caller's fault (4xx), the second the target's or
// ours (502/503/504/500).
var (
	ErrSelectorNotFound = errors.New("the selector matched no element")
	ErrInvalidSelector  = errors.New("the selector is not valid CSS")
	ErrNotReady         = errors.New("the page never called ScreenshotReady()")
	ErrBlockedURL       = errors.New("the URL is not allowed")
	ErrTooLarge         = errors.New("the output exceeds its size limit")
	ErrEmpty            = errors.New("the content has no visible size")
	ErrPageMemory       = errors.New("the page used more memory than a render may")
	ErrPageBusy         = errors.New("the page's scripts did not yield")

	ErrQueueFull    = errors.New("the render queue is full")
	ErrUnreachable  = errors.New("the target site could not be reached")
	ErrInvalidProxy = errors.New("the proxy cannot be used")
	ErrTimeout      = errors.New("the render timed out")
	ErrBrowser      = errors.New("the browser failed")
	ErrCrashed      = errors.New("the page crashed")
	ErrStopped      = errors.New("the render engine is stopped")
)
