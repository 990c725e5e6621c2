package render

import (
	"time"

	"github.com/pictorhq/pictor/origin/egress"
)

// Request is one render.
type Request struct {
	// OrgID decides which tabs may be reused: tabs never cross organizations.
	OrgID string

	// HTML is rendered when URL is empty.
	HTML string
	URL  string
	CSS  string
	// GoogleFonts are family specs (as in the css2 API) to load.
	GoogleFonts []string

	DeviceScale float64
	// ViewportWidth/Height of 0 mean the default 1920×1080; an HTML snippet
	// is then cropped to its content.
	ViewportWidth, ViewportHeight int
	Mobile, Landscape, Touch      bool
	MediaType                     string // "", "screen" or "print"
	ColorScheme                   string // "", "light" or "dark"
	Timezone                      string

	Selector  string
	Delay     time.Duration
	MaxWait   time.Duration
	WhenReady bool
	FullPage  bool

	BlockConsent bool
	Twemoji      bool
	Transparent  bool

	// Headers go to URL, to HeaderOrigins, and to subrequests of those
	// origins only when HeadersOnSubrequests.
	Headers              map[string]string
	HeaderOrigins        []string
	HeadersOnSubrequests bool
	IdentifyAsService    bool
	// Upstream routes every request of the render through the
	// organization's proxy (proxy_id); nil goes direct.
	Upstream *egress.Upstream

	// MaxWidth and MaxHeight bound the output in device pixels.
	MaxWidth, MaxHeight int
	// MaxPixels bounds the output's width × height; 0 for no bound. Like
	// MaxHeight, it cuts the capture at the bottom.
	MaxPixels int64

	// PDF prints instead of capturing pixels.
	PDF *PDFOptions
}

// PDFOptions are the print settings, lengths in inches.
type PDFOptions struct {
	PageWidth, PageHeight float64 // 0 = US Letter
	Scale                 float64 // 0 = 1
	Margins               [4]float64
	PrintBackground       bool
}

// Result is a finished render.
type Result struct {
	Data          []byte // PNG or PDF
	Width, Height int    // device pixels (0 for PDF)
	// Blocked lists the requests the egress refused during the render.
	Blocked []string
	// Settled reports that the wait for web fonts and for the images that
	// matter to the capture ended because they had all loaded or failed,
	// not because max_wait ran out.
	Settled bool
}

// Default viewport of full documents and URL renders.
const (
	DefaultWidth  = 1920
	DefaultHeight = 1080
)

func (r *Request) viewport() (w, h int) {
	if r.ViewportWidth > 0 && r.ViewportHeight > 0 {
		return r.ViewportWidth, r.ViewportHeight
	}
	return DefaultWidth, DefaultHeight
}

// autoCrop reports whether the image is cropped to the content: an HTML
// snippet rendered without a viewport.
func (r *Request) autoCrop() bool {
	return r.URL == "" && r.ViewportWidth == 0 && IsSnippet(r.HTML)
}

func (r *Request) scale() float64 {
	if r.DeviceScale > 0 {
		return r.DeviceScale
	}
	if r.URL != "" {
		return 1
	}
	return 2
}
