package imageparams

import "time"

// Limits of spec §2.2 and §8. Lengths counted in characters are Unicode code
// points; the others are bytes.
const (
	MaxHTMLBytes           = 5 << 20 // html
	MaxCSSBytes            = 1 << 20 // css
	MaxURLLength           = 2048    // url, characters
	MaxTemplateValuesBytes = 1 << 20 // template_values, compact JSON

	MaxIDLength       = 100  // template_id, proxy_id, storage_destination_id, characters
	MaxSelectorLength = 1000 // selector, characters
	MaxTimezoneLength = 64   // timezone, characters

	MaxGoogleFonts          = 20  // families in google_fonts
	MaxGoogleFontSpecLength = 500 // one family spec, characters

	MinDeviceScale = 0.1
	MaxDeviceScale = 3.0
	MinViewport    = 1
	MaxViewport    = 6000
	MaxJumbo       = 80000

	MaxDelay   = 10 * time.Second       // ms_delay
	MinMaxWait = 500 * time.Millisecond // max_wait_ms
	MaxMaxWait = 10 * time.Second       // max_wait_ms, before the plan cap

	MaxHeaders                 = 20      // unique custom header names
	MaxHeaderValueBytes        = 8 << 10 // one header value
	MaxAdditionalHeaderOrigins = 20      // unique origins

	MaxDedupeDurationS = 31536000 // dedupe_duration_s, one year

	MaxMetadataEntries     = 50
	MaxMetadataKeyLength   = 100  // characters
	MaxMetadataValueLength = 1000 // characters

	MinPDFScale  = 0.1
	MaxPDFScale  = 2.0
	MaxPDFInches = 200.0 // largest PDF page side (the PDF format's limit) and margin
)

// Kind is what a request renders.
type Kind int

// Kinds of render. KindNone is a request without a source, possible only when
// Options.RequireSource is false (batch default_options, template defaults).
const (
	KindNone Kind = iota
	KindHTML
	KindURL
	KindTemplate
)

func (k Kind) String() string {
	switch k {
	case KindHTML:
		return "html"
	case KindURL:
		return "url"
	case KindTemplate:
		return "template"
	}
	return "none"
}

// Format is the extension of the image URL returned at creation.
type Format string

// Formats.
const (
	FormatPNG  Format = "png"
	FormatJPG  Format = "jpg"
	FormatWebP Format = "webp"
	FormatPDF  Format = "pdf"
)

// MediaType is the emulated CSS media type.
type MediaType string

// Media types; the zero value leaves the browser's default.
const (
	MediaScreen MediaType = "screen"
	MediaPrint  MediaType = "print"
)

// ColorScheme is the emulated prefers-color-scheme.
type ColorScheme string

// Color schemes; the zero value leaves the browser's default.
const (
	ColorLight ColorScheme = "light"
	ColorDark  ColorScheme = "dark"
)

// Size is a width and height in CSS pixels.
type Size struct{ Width, Height int }

// Margins are PDF page margins in inches.
type Margins struct{ Top, Right, Bottom, Left float64 }

// PDFOptions is pdf_options. Lengths are in inches.
type PDFOptions struct {
	PageWidth       float64  // 0: the renderer's default
	PageHeight      float64  // 0: the renderer's default
	Scale           float64  // 0.1 to 2, default 1
	Margins         *Margins // nil: the renderer's default
	PrintBackground bool
}

// Params are validated image creation parameters. Fields hold what was sent,
// normalized; zero values mean "not sent" and methods resolve defaults.
type Params struct {
	// Exactly one source is set after Parse (or none, see KindNone). When
	// both html and url were sent, url wins and HTML stays empty.
	HTML       string
	URL        string // scheme and host lowercased, default port dropped, empty path made "/"
	TemplateID string
	// TemplateValues is the template_values object as compact JSON with
	// sorted keys, nil when not sent or empty.
	TemplateValues []byte

	CSS         string
	GoogleFonts []string // family specs, "+" read as a space, blanks trimmed

	// RequestedDeviceScale is device_scale as sent, 0 when not sent; use
	// DeviceScale for the effective value.
	RequestedDeviceScale float64
	Viewport             *Size // nil: automatic cropping / 1920x1080
	ViewportMobile       bool
	ViewportLandscape    bool
	ViewportTouch        bool
	MediaType            MediaType
	ColorScheme          ColorScheme
	Timezone             string // IANA name
	Selector             string

	Delay                 time.Duration // ms_delay
	MaxWait               time.Duration // max_wait_ms; 0 when not sent
	RenderWhenReady       bool
	FullScreen            bool
	BlockConsentBanners   bool
	DisableTwemoji        *bool // nil when not sent; use Twemoji
	TransparentBackground bool
	Format                Format // png when not sent
	PDF                   *PDFOptions

	// Headers maps canonical header names (textproto form) to values
	// trimmed of surrounding blanks.
	Headers map[string]string
	// AdditionalHeaderOrigins are normalized origins, sorted, without duplicates.
	AdditionalHeaderOrigins     []string
	IncludeHeadersOnSubrequests bool
	IdentifyAsService           bool

	DedupeDurationS *int // seconds; nil when not sent (plan defaults apply elsewhere)
	Jumbo           *Size

	Metadata             map[string]string
	ProxyID              string
	StorageDestinationID string
}

// Kind reports what p renders: a template when template_id is set, else a
// URL when url is set, else HTML when html is set.
func (p *Params) Kind() Kind {
	switch {
	case p.TemplateID != "":
		return KindTemplate
	case p.URL != "":
		return KindURL
	case p.HTML != "":
		return KindHTML
	}
	return KindNone
}

// DeviceScale is device_scale, or its default: 1 for URL renders, 2 for
// HTML and template renders (and requests without a source).
func (p *Params) DeviceScale() float64 {
	if p.RequestedDeviceScale != 0 {
		return p.RequestedDeviceScale
	}
	if p.Kind() == KindURL {
		return 1
	}
	return 2
}

// Twemoji reports whether the emoji image set is injected: by default for
// HTML and template renders unless disable_twemoji is true; for URL renders
// only when disable_twemoji is explicitly false.
func (p *Params) Twemoji() bool {
	if p.Kind() == KindURL {
		return p.DisableTwemoji != nil && !*p.DisableTwemoji
	}
	return p.DisableTwemoji == nil || !*p.DisableTwemoji
}
