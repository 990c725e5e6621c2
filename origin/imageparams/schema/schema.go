package schema

import (
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pictorhq/pictor/origin/imageparams"
)

// Use says which parameter sets an image creation parameter belongs to.
type Use uint8

// Parameter sets.
const (
	ForHTML     Use = 1 << iota // HTML renders (POST /v1/image with html)
	ForURL                      // URL renders (POST /v1/image with url)
	ForTemplate                 // template renders: overrides of the template's defaults
	ForBatch                    // a batch's default_options and each variation
	ForDefaults                 // a template's render defaults

	// Everywhere are the options every kind of image takes.
	Everywhere = ForHTML | ForURL | ForTemplate | ForBatch | ForDefaults
)

// Param is one image creation parameter.
type Param struct {
	Name string
	Use  Use
	// Schema describes the parameter's JSON value. Examples, when present,
	// are valid values (the tests parse them).
	Schema *jsonschema.Schema
}

// Params returns the table, in its order: a copy, whose schemas the caller
// may change.
func Params() []Param {
	out := make([]Param, len(params))
	for i, p := range params {
		out[i] = Param{Name: p.Name, Use: p.Use, Schema: p.Schema.CloneSchemas()}
	}
	return out
}

// Properties returns copies of the schemas of the parameters in u, and
// their names in the table's order.
func Properties(u Use) (map[string]*jsonschema.Schema, []string) {
	props := map[string]*jsonschema.Schema{}
	var order []string
	for _, p := range params {
		if p.Use&u != 0 {
			props[p.Name] = p.Schema.CloneSchemas()
			order = append(order, p.Name)
		}
	}
	return props, order
}

// Lookup returns a copy of the schema of a parameter. It panics on a name
// that is not in the table: the callers name parameters in code.
func Lookup(name string) *jsonschema.Schema {
	for _, p := range params {
		if p.Name == name {
			return p.Schema.CloneSchemas()
		}
	}
	panic("schema: no image parameter " + name)
}

// params is the one table of the image creation parameters.
var params = []Param{
	{"html", ForHTML | ForBatch, String("HTML to render: a snippet (cropped automatically to its outermost element, margins included) or a full document (rendered in the viewport, 1920x1080 unless viewport_width/viewport_height say otherwise). Up to 5 MiB.",
		`<div style="padding:40px;font:48px sans-serif;background:#0b5;color:#fff">Hello</div>`)},
	{"url", ForURL | ForBatch, WithFormat("uri", String("Public http or https URL of the page to capture, e.g. https://example.com/pricing. Private and local addresses are refused. Up to 2048 characters. When both url and html are sent, url wins.",
		"https://example.com/"))},
	{"template_id", ForBatch, WithPattern("^t-", String("Template to render (ids start with t-), filled with template_values. In a batch it may also be given once at the top level.",
		"t-0190b2c4-7a1e-7d2f-9c3b-2f4e5a6b7c8d"))},
	{"template_values", ForBatch, Object("Values for the template's Handlebars placeholders: {{name}} is HTML-escaped, {{{name}}} raw; nested objects and arrays allowed. Up to 1 MiB of JSON.",
		map[string]any{"title": "Launch day", "author": map[string]any{"name": "Ada"}})},
	{"css", Everywhere, String("CSS for the page: styles the html, or is injected into the loaded page of a url. Up to 1 MiB.",
		"body { background: #fafafa; }")},
	{"google_fonts", Everywhere, String("Google Fonts families to load, separated by |, e.g. Roboto|Open Sans:wght@400;700 (at most 20).",
		"Roboto|Open Sans")},
	{"device_scale", Everywhere, Number(imageparams.MinDeviceScale, imageparams.MaxDeviceScale,
		"Device pixel ratio, 0.1 to 3: multiplies every dimension of the image. Default 2 for html and templates (a 400x200 element gives 800x400 pixels), 1 for url.", 1)},
	{"viewport_width", Everywhere, Integer(imageparams.MinViewport, imageparams.MaxViewport,
		"Viewport width in CSS pixels, 1 to 6000. Send with viewport_height. Setting the viewport turns automatic cropping off: the image is the viewport (or the whole page with full_screen).", 1200)},
	{"viewport_height", Everywhere, Integer(imageparams.MinViewport, imageparams.MaxViewport,
		"Viewport height in CSS pixels, 1 to 6000. Send with viewport_width.", 630)},
	{"viewport_mobile", Everywhere, Boolean("Emulate a mobile device (mobile viewport meta tag honored).")},
	{"viewport_landscape", Everywhere, Boolean("Emulate landscape orientation.")},
	{"viewport_touch", Everywhere, Boolean("Emulate a touch screen.")},
	{"media_type", Everywhere, Enum("Emulated CSS media type.", "screen", "print")},
	{"color_scheme", Everywhere, Enum("Emulated prefers-color-scheme.", "light", "dark")},
	{"timezone", Everywhere, WithMaxLength(imageparams.MaxTimezoneLength, String("IANA time zone of the page's clock, e.g. Europe/Paris.", "America/New_York"))},
	{"selector", Everywhere, WithMaxLength(imageparams.MaxSelectorLength, String("CSS selector: the image is cropped to the first matching element.", "#card"))},
	{"ms_delay", Everywhere, Integer(0, imageparams.MaxDelay.Milliseconds(),
		"Fixed wait before the capture in milliseconds, 0 to 10000 (default 0). Prefer render_when_ready for pages that signal when they are ready.", 500)},
	{"max_wait_ms", Everywhere, Integer(imageparams.MinMaxWait.Milliseconds(), imageparams.MaxMaxWait.Milliseconds(),
		"Longest wait for the page to load or signal readiness, in milliseconds, 500 to 10000 and no more than the plan allows (the free plan: 5000). A cap, not a delay.", 5000)},
	{"render_when_ready", Everywhere, Boolean("Wait until the page's JavaScript calls ScreenshotReady(); the image fails if it never does (within max_wait_ms).")},
	{"full_screen", Everywhere, Boolean("Capture the whole height of the page, not just the viewport.")},
	{"block_consent_banners", Everywhere, Boolean("Hide cookie consent banners and similar popups.")},
	{"disable_twemoji", Everywhere, Boolean("Emoji: html and template images draw emoji with the Twemoji image set unless this is true (native emoji); url images use Twemoji only when this is explicitly false.")},
	{"transparent_background", Everywhere, Boolean("Render with a transparent background (use the png format).")},
	{"format", Everywhere, Enum("Format of the returned URL: png (default), jpg (jpeg is read as jpg), webp or pdf. Every format stays available by changing the URL's extension.", "png", "jpg", "jpeg", "webp", "pdf")},
	{"pdf_options", Everywhere, pdfOptions()},
	{"headers", Everywhere, WithMaxProperties(imageparams.MaxHeaders, StringMap(
		"Custom HTTP headers for url captures (name to value, at most 20 names, case-insensitive), sent only to the url's origin and additional_header_origins. Hop-by-hop, framing and proxy headers cannot be set.",
		map[string]any{"Authorization": "Bearer preview-token"}))},
	{"additional_header_origins", Everywhere, StringArray(
		"Exact origins (scheme://host[:port]) that also receive the custom headers; at most 20 unique origins.",
		[]any{"https://cdn.example.com"})},
	{"include_headers_on_subrequests", Everywhere, Boolean("Send the custom headers on subrequests (images, scripts, XHR) to those origins too, not only on the top-level page request. Default false.")},
	{"identify_as_service", Everywhere, Boolean("Add the header X-SERVICE-SCREENSHOT: 1 to the top-level page request, so the site can recognise the capture.")},
	{"dedupe_duration_s", ForHTML | ForURL, Integer(0, imageparams.MaxDedupeDurationS,
		"Reuse an identical image created within this many seconds instead of making a new one; a reuse consumes no credit. 0 turns it off. Default 0 for url; for html the plan's default (free and basic plans allow only 0 or 2592000). Single html and url creations only.", 0)},
	{"jumbo_max_width", Everywhere, Integer(1, imageparams.MaxJumbo,
		"Allow an image wider than the normal limit, up to this many pixels (at most 80000). Send with jumbo_max_height. Consumes additional image credits.", 20000)},
	{"jumbo_max_height", Everywhere, Integer(1, imageparams.MaxJumbo,
		"Allow an image taller than the normal limit, up to this many pixels (at most 80000). Send with jumbo_max_width. Consumes additional image credits.", 20000)},
	{"metadata", Everywhere, WithMaxProperties(imageparams.MaxMetadataEntries, StringMap(
		"Your key-value strings stored with the image (at most 50 entries; keys up to 100 characters, values up to 1000).",
		map[string]any{"campaign": "spring"}))},
	{"proxy_id", Everywhere, WithMaxLength(imageparams.MaxIDLength, String(
		"Route the render's outbound traffic through one of the organization's proxies (its id). Needs the 10,000 images/month plan or higher.",
		"0190b2c4-7a1e-7d2f-9c3b-2f4e5a6b7c8d"))},
	{"storage_destination_id", Everywhere, WithMaxLength(imageparams.MaxIDLength, String(
		"Also write the rendered files to one of the organization's storage destinations (its id). Needs the 10,000 images/month plan or higher.",
		"0190b2c4-7a1e-7d2f-9c3b-2f4e5a6b7c8e"))},
}

func pdfOptions() *jsonschema.Schema {
	length := "Length with a unit px, in, cm, mm or pt, e.g. 8.5in or 210mm."
	s := Object("PDF output options (used by the pdf format and the .pdf URL).", map[string]any{
		"page_width": "8.5in", "page_height": "11in", "scale": 1, "margins": []any{"0.5in", "0.5in", "0.5in", "0.5in"}, "print_background": true,
	})
	s.Properties = map[string]*jsonschema.Schema{
		"page_width":  String("Page width. "+length, "8.5in"),
		"page_height": String("Page height. "+length, "11in"),
		"scale":       Number(imageparams.MinPDFScale, imageparams.MaxPDFScale, "Scale of the page's rendering, 0.1 to 2 (default 1).", 1),
		"margins": WithItems(4, String(length, "0.5in"), &jsonschema.Schema{Type: "array",
			Description: "Exactly four margins: top, right, bottom, left. " + length}),
		"print_background": Boolean("Print background colors and images (default false)."),
	}
	s.PropertyOrder = []string{"page_width", "page_height", "scale", "margins", "print_background"}
	return s
}

// Builders of the JSON Schemas of parameters, shared by this table and
// the MCP tools' own schemas (origin/mcpserver). An example of nil is
// left out.

// String is a string.
func String(description string, example any) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Description: description, Examples: examples(example)}
}

// Integer is an integer between min and max.
func Integer(min, max int64, description string, example any) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "integer", Description: description, Minimum: jsonschema.Ptr(float64(min)),
		Maximum: jsonschema.Ptr(float64(max)), Examples: examples(example)}
}

// Number is a number between min and max.
func Number(min, max float64, description string, example any) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "number", Description: description, Minimum: jsonschema.Ptr(min),
		Maximum: jsonschema.Ptr(max), Examples: examples(example)}
}

// Boolean is a boolean.
func Boolean(description string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "boolean", Description: description}
}

// Enum is a string among values.
func Enum(description string, values ...string) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "string", Description: description}
	for _, v := range values {
		s.Enum = append(s.Enum, v)
	}
	return s
}

// Object is an object.
func Object(description string, example any) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Description: description, Examples: examples(example)}
}

// StringMap is an object of strings.
func StringMap(description string, example any) *jsonschema.Schema {
	s := Object(description, example)
	s.AdditionalProperties = &jsonschema.Schema{Type: "string"}
	return s
}

// StringArray is an array of strings.
func StringArray(description string, example any) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", Description: description, Items: &jsonschema.Schema{Type: "string"},
		Examples: examples(example)}
}

// Nullable lets s be null too.
func Nullable(s *jsonschema.Schema) *jsonschema.Schema {
	s.Types, s.Type = []string{s.Type, "null"}, ""
	return s
}

// WithFormat gives s a format.
func WithFormat(format string, s *jsonschema.Schema) *jsonschema.Schema {
	s.Format = format
	return s
}

// WithPattern gives s a pattern.
func WithPattern(pattern string, s *jsonschema.Schema) *jsonschema.Schema {
	s.Pattern = pattern
	return s
}

// WithMaxLength bounds the length of s.
func WithMaxLength(n int, s *jsonschema.Schema) *jsonschema.Schema {
	s.MaxLength = jsonschema.Ptr(n)
	return s
}

// WithMaxProperties bounds the properties of s.
func WithMaxProperties(n int, s *jsonschema.Schema) *jsonschema.Schema {
	s.MaxProperties = jsonschema.Ptr(n)
	return s
}

// WithItems makes s an array of exactly n items.
func WithItems(n int, item, s *jsonschema.Schema) *jsonschema.Schema {
	s.Items, s.MinItems, s.MaxItems = item, jsonschema.Ptr(n), jsonschema.Ptr(n)
	return s
}

func examples(v any) []any {
	if v == nil {
		return nil
	}
	return []any{v}
}
