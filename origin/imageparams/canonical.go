package imageparams

import (
	"encoding/json"
	"strings"
)

// canonicalParams is the wire shape of Canonical: request field names, so the
// canonical form is itself a valid request.
type canonicalParams struct {
	HTML                        string            `json:"html,omitempty"`
	URL                         string            `json:"url,omitempty"`
	TemplateID                  string            `json:"template_id,omitempty"`
	TemplateValues              json.RawMessage   `json:"template_values,omitempty"`
	CSS                         string            `json:"css,omitempty"`
	GoogleFonts                 string            `json:"google_fonts,omitempty"`
	DeviceScale                 float64           `json:"device_scale"`
	ViewportWidth               int               `json:"viewport_width,omitempty"`
	ViewportHeight              int               `json:"viewport_height,omitempty"`
	ViewportMobile              bool              `json:"viewport_mobile,omitempty"`
	ViewportLandscape           bool              `json:"viewport_landscape,omitempty"`
	ViewportTouch               bool              `json:"viewport_touch,omitempty"`
	MediaType                   MediaType         `json:"media_type,omitempty"`
	ColorScheme                 ColorScheme       `json:"color_scheme,omitempty"`
	Timezone                    string            `json:"timezone,omitempty"`
	Selector                    string            `json:"selector,omitempty"`
	MsDelay                     int64             `json:"ms_delay,omitempty"`
	MaxWaitMS                   int64             `json:"max_wait_ms,omitempty"`
	RenderWhenReady             bool              `json:"render_when_ready,omitempty"`
	FullScreen                  bool              `json:"full_screen,omitempty"`
	BlockConsentBanners         bool              `json:"block_consent_banners,omitempty"`
	DisableTwemoji              bool              `json:"disable_twemoji"`
	TransparentBackground       bool              `json:"transparent_background,omitempty"`
	Format                      Format            `json:"format"`
	PDFOptions                  *canonicalPDF     `json:"pdf_options,omitempty"`
	Headers                     map[string]string `json:"headers,omitempty"`
	AdditionalHeaderOrigins     []string          `json:"additional_header_origins,omitempty"`
	IncludeHeadersOnSubrequests bool              `json:"include_headers_on_subrequests,omitempty"`
	IdentifyAsService           bool              `json:"identify_as_service,omitempty"`
	JumboMaxWidth               int               `json:"jumbo_max_width,omitempty"`
	JumboMaxHeight              int               `json:"jumbo_max_height,omitempty"`
	Metadata                    map[string]string `json:"metadata,omitempty"`
	ProxyID                     string            `json:"proxy_id,omitempty"`
	StorageDestinationID        string            `json:"storage_destination_id,omitempty"`
}

type canonicalPDF struct {
	PageWidth       string   `json:"page_width,omitempty"`
	PageHeight      string   `json:"page_height,omitempty"`
	Scale           float64  `json:"scale"`
	Margins         []string `json:"margins,omitempty"`
	PrintBackground bool     `json:"print_background"`
}

// Canonical returns the identity of the request as deterministic, compact
// JSON: every creation parameter except dedupe_duration_s, with defaults
// resolved (device_scale, format, disable_twemoji as the effective choice,
// pdf scale), header names lowercased, origins sorted, PDF lengths in
// inches, and only the source that is rendered. Equivalent requests, JSON or
// form, give equal bytes, and the result is itself a valid request that
// parses to the same Canonical.
//
// Canonical panics only if p was built by hand with TemplateValues that are
// not JSON.
func (p *Params) Canonical() []byte {
	c := canonicalParams{
		CSS:                         p.CSS,
		GoogleFonts:                 strings.Join(p.GoogleFonts, "|"),
		DeviceScale:                 p.DeviceScale(),
		ViewportMobile:              p.ViewportMobile,
		ViewportLandscape:           p.ViewportLandscape,
		ViewportTouch:               p.ViewportTouch,
		MediaType:                   p.MediaType,
		ColorScheme:                 p.ColorScheme,
		Timezone:                    p.Timezone,
		Selector:                    p.Selector,
		MsDelay:                     p.Delay.Milliseconds(),
		MaxWaitMS:                   p.MaxWait.Milliseconds(),
		RenderWhenReady:             p.RenderWhenReady,
		FullScreen:                  p.FullScreen,
		BlockConsentBanners:         p.BlockConsentBanners,
		DisableTwemoji:              !p.Twemoji(),
		TransparentBackground:       p.TransparentBackground,
		Format:                      p.Format,
		AdditionalHeaderOrigins:     p.AdditionalHeaderOrigins,
		IncludeHeadersOnSubrequests: p.IncludeHeadersOnSubrequests,
		IdentifyAsService:           p.IdentifyAsService,
		Metadata:                    p.Metadata,
		ProxyID:                     p.ProxyID,
		StorageDestinationID:        p.StorageDestinationID,
	}
	switch p.Kind() {
	case KindTemplate:
		c.TemplateID = p.TemplateID
		c.TemplateValues = p.TemplateValues
	case KindURL:
		c.URL = p.URL
	case KindHTML:
		c.HTML = p.HTML
	}
	if c.Format == "" {
		c.Format = FormatPNG
	}
	if p.Viewport != nil {
		c.ViewportWidth, c.ViewportHeight = p.Viewport.Width, p.Viewport.Height
	}
	if p.Jumbo != nil {
		c.JumboMaxWidth, c.JumboMaxHeight = p.Jumbo.Width, p.Jumbo.Height
	}
	if pdf := p.PDF; pdf != nil {
		cp := &canonicalPDF{Scale: pdf.Scale, PrintBackground: pdf.PrintBackground}
		if cp.Scale == 0 {
			cp.Scale = 1
		}
		if pdf.PageWidth > 0 {
			cp.PageWidth = inches(pdf.PageWidth)
		}
		if pdf.PageHeight > 0 {
			cp.PageHeight = inches(pdf.PageHeight)
		}
		if m := pdf.Margins; m != nil {
			cp.Margins = []string{inches(m.Top), inches(m.Right), inches(m.Bottom), inches(m.Left)}
		}
		c.PDFOptions = cp
	}
	if len(p.Headers) > 0 {
		c.Headers = make(map[string]string, len(p.Headers))
		for name, value := range p.Headers {
			c.Headers[strings.ToLower(name)] = value
		}
	}
	b, err := marshal(c)
	if err != nil {
		panic("imageparams: Canonical: " + err.Error())
	}
	return b
}

// inches writes a length in inches in the shortest form that reads back to
// the same float64.
func inches(v float64) string { return formatFloat(v) + "in" }
