package imageparams

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/textproto"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pictorhq/pictor/origin/contract/field"
)

// Options adapt Parse to where the parameters come from.
type Options struct {
	// MaxWaitCap is the plan's cap on max_wait_ms; 0 means no plan cap.
	MaxWaitCap time.Duration
	// RequireSource makes html, url or template_id mandatory. Leave it false
	// for partial parameter sets such as batch default_options.
	RequireSource bool
}

// Parse validates the image creation parameters in o. It reads numbers and
// booleans written as strings from JSON too (o itself is not modified), uses
// o.Prefix in every error path, and ignores unknown fields. In a form, a
// field whose value is empty counts as not sent.
//
// The error is an *apierr.Error (400) listing every invalid field.
func Parse(o *field.Object, opts Options) (Params, error) {
	if o == nil {
		o = field.FromJSON(nil)
	}
	lenient := *o
	lenient.Lenient = true
	ps := parser{o: &lenient, opts: opts}
	ps.parse()
	if err := ps.errs.Err(); err != nil {
		return Params{}, err
	}
	return ps.p, nil
}

type parser struct {
	o    *field.Object
	opts Options
	errs field.Errors
	p    Params
}

func (ps *parser) parse() {
	ps.source()
	if s, ok := ps.str("css"); ok {
		if len(s) > MaxCSSBytes {
			ps.fail("css", "must be at most %d bytes (1 MiB), got %d", MaxCSSBytes, len(s))
		}
		ps.p.CSS = s
	}
	ps.templateValues()
	if s, ok := ps.str("google_fonts"); ok {
		fonts, problem := parseGoogleFonts(s)
		if problem != "" {
			ps.fail("google_fonts", "%s", problem)
		}
		ps.p.GoogleFonts = fonts
	}
	if v, ok := ps.float("device_scale", MinDeviceScale, MaxDeviceScale); ok {
		ps.p.RequestedDeviceScale = v
	}
	ps.p.Viewport = ps.pair("viewport_width", "viewport_height", MinViewport, MaxViewport)
	ps.p.ViewportMobile = ps.boolean("viewport_mobile")
	ps.p.ViewportLandscape = ps.boolean("viewport_landscape")
	ps.p.ViewportTouch = ps.boolean("viewport_touch")
	ps.p.MediaType = MediaType(ps.enum("media_type", string(MediaScreen), string(MediaPrint)))
	ps.p.ColorScheme = ColorScheme(ps.enum("color_scheme", string(ColorLight), string(ColorDark)))
	if s, ok := ps.str("timezone"); ok {
		if problem := checkTimezone(s); problem != "" {
			ps.fail("timezone", "%s", problem)
		}
		ps.p.Timezone = s
	}
	if s, ok := ps.str("selector"); ok {
		switch n := utf8.RuneCountInString(s); {
		case strings.TrimSpace(s) == "":
			ps.fail("selector", "must not be blank")
		case n > MaxSelectorLength:
			ps.fail("selector", "must be at most %d characters, got %d", MaxSelectorLength, n)
		}
		ps.p.Selector = s
	}
	if v, ok := ps.integer("ms_delay", 0, MaxDelay.Milliseconds()); ok {
		ps.p.Delay = time.Duration(v) * time.Millisecond
	}
	if v, ok := ps.integer("max_wait_ms", MinMaxWait.Milliseconds(), MaxMaxWait.Milliseconds()); ok {
		if limit := ps.opts.MaxWaitCap.Milliseconds(); limit > 0 && v > limit {
			ps.fail("max_wait_ms", "must be at most %d: your plan limits max_wait_ms to %d ms", limit, limit)
		}
		ps.p.MaxWait = time.Duration(v) * time.Millisecond
	}
	ps.p.RenderWhenReady = ps.boolean("render_when_ready")
	ps.p.FullScreen = ps.boolean("full_screen")
	ps.p.BlockConsentBanners = ps.boolean("block_consent_banners")
	if ps.sent("disable_twemoji") {
		if v, ok := ps.o.Bool(&ps.errs, "disable_twemoji"); ok {
			ps.p.DisableTwemoji = &v
		}
	}
	ps.p.TransparentBackground = ps.boolean("transparent_background")
	ps.p.Format = FormatPNG
	switch f := ps.enum("format", "png", "jpg", "jpeg", "webp", "pdf"); f {
	case "jpeg":
		ps.p.Format = FormatJPG
	case "":
	default:
		ps.p.Format = Format(f)
	}
	ps.pdfOptions()
	ps.headers()
	ps.additionalHeaderOrigins()
	ps.p.IncludeHeadersOnSubrequests = ps.boolean("include_headers_on_subrequests")
	ps.p.IdentifyAsService = ps.boolean("identify_as_service")
	if v, ok := ps.integer("dedupe_duration_s", 0, MaxDedupeDurationS); ok {
		n := int(v)
		ps.p.DedupeDurationS = &n
	}
	ps.p.Jumbo = ps.pair("jumbo_max_width", "jumbo_max_height", 1, MaxJumbo)
	ps.metadata()
	ps.p.ProxyID = ps.id("proxy_id")
	ps.p.StorageDestinationID = ps.id("storage_destination_id")
}

// source reads html, url and template_id.
func (ps *parser) source() {
	hasTemplate, hasURL, hasHTML := ps.sent("template_id"), ps.sent("url"), ps.sent("html")
	switch {
	case hasTemplate:
		if id, ok := ps.str("template_id"); ok {
			switch n := utf8.RuneCountInString(id); {
			case !strings.HasPrefix(id, "t-") || len(id) == len("t-"):
				ps.fail("template_id", "must be a template id (t-...)")
			case n > MaxIDLength:
				ps.fail("template_id", "must be at most %d characters, got %d", MaxIDLength, n)
			}
			ps.p.TemplateID = id
		}
		if hasURL || hasHTML {
			ps.fail("template_id", "cannot be combined with html or url")
		}
	case hasURL:
		// url takes precedence over html (spec §2.2): html is not even read.
		if s, ok := ps.str("url"); ok {
			u, problem := normalizeURL(s)
			if problem != "" {
				ps.fail("url", "%s", problem)
			}
			ps.p.URL = u
		}
	case hasHTML:
		if s, ok := ps.str("html"); ok {
			switch {
			case strings.TrimSpace(s) == "":
				ps.fail("html", "must not be blank")
			case len(s) > MaxHTMLBytes:
				ps.fail("html", "must be at most %d bytes (5 MiB), got %d", MaxHTMLBytes, len(s))
			}
			ps.p.HTML = s
		}
	case ps.opts.RequireSource:
		ps.fail("html", "is required: send html, url or template_id")
	}
}

func (ps *parser) templateValues() {
	raw, ok := ps.rawObject("template_values")
	if !ok {
		return
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil || !atEOF(dec) {
		ps.fail("template_values", "%s", ps.objectProblem())
		return
	}
	if len(m) == 0 {
		return
	}
	b, err := marshal(m)
	if err != nil {
		ps.fail("template_values", "%s", ps.objectProblem())
		return
	}
	if len(b) > MaxTemplateValuesBytes {
		ps.fail("template_values", "must be at most %d bytes (1 MiB) of JSON, got %d", MaxTemplateValuesBytes, len(b))
	}
	ps.p.TemplateValues = b
}

func (ps *parser) pdfOptions() {
	members, ok := ps.members("pdf_options")
	if !ok {
		return
	}
	m := make(map[string]json.RawMessage, len(members))
	for _, mb := range members {
		m[mb.key] = mb.value
	}
	sub := field.FromJSON(m)
	sub.Prefix = ps.path("pdf_options") + "."
	sub.Lenient = true

	pdf := &PDFOptions{Scale: 1}
	length := func(name string) float64 {
		s, ok := sub.String(&ps.errs, name)
		if !ok {
			return 0
		}
		in, problem := parseLength(s, false)
		if problem != "" {
			ps.errs.Add(sub.Path(name), "%s", problem)
		}
		return in
	}
	pdf.PageWidth = length("page_width")
	pdf.PageHeight = length("page_height")
	if v, ok := sub.Float(&ps.errs, "scale", MinPDFScale, MaxPDFScale); ok {
		pdf.Scale = v
	}
	if margins, ok := sub.StringArray(&ps.errs, "margins"); ok {
		if len(margins) != 4 {
			ps.errs.Add(sub.Path("margins"), "must hold exactly 4 lengths: top, right, bottom, left")
		} else {
			var v [4]float64
			valid := true
			for i, s := range margins {
				in, problem := parseLength(s, true)
				if problem != "" {
					ps.errs.Add(fmt.Sprintf("%s[%d]", sub.Path("margins"), i), "%s", problem)
					valid = false
				}
				v[i] = in
			}
			if valid {
				pdf.Margins = &Margins{Top: v[0], Right: v[1], Bottom: v[2], Left: v[3]}
				if pdf.PageHeight > 0 && v[0]+v[2] >= pdf.PageHeight {
					ps.errs.Add(sub.Path("margins"), "top and bottom margins must leave room on the page")
				}
				if pdf.PageWidth > 0 && v[1]+v[3] >= pdf.PageWidth {
					ps.errs.Add(sub.Path("margins"), "left and right margins must leave room on the page")
				}
			}
		}
	}
	pdf.PrintBackground, _ = sub.Bool(&ps.errs, "print_background")
	ps.p.PDF = pdf
}

// header is one custom header as sent, with the path of its errors.
type header struct {
	name, value string
	path        string
	isString    bool
}

func (ps *parser) headers() {
	const name = "headers"
	base := ps.path(name)
	var list []header
	if ps.o.IsForm() {
		vs := ps.o.FormValues(name)
		for i, v := range vs {
			if v == "" {
				continue
			}
			where := base
			if len(vs) > 1 {
				where = fmt.Sprintf("%s[%d]", base, i)
			}
			if !utf8.ValidString(v) {
				ps.errs.Add(where, "must be valid UTF-8 text")
				continue
			}
			if strings.HasPrefix(strings.TrimSpace(v), "{") {
				members, err := decodeMembers([]byte(v))
				if err != nil {
					ps.errs.Add(where, "must be a JSON-encoded object of header names to values, or Name:value")
					continue
				}
				list = append(list, headerList(base, members)...)
				continue
			}
			n, val, found := strings.Cut(v, ":")
			if !found {
				ps.errs.Add(where, "must be Name:value")
				continue
			}
			n = strings.TrimSpace(n)
			list = append(list, header{name: n, value: val, path: base + "." + n, isString: true})
		}
	} else {
		raw, ok := ps.o.Raw(name)
		if !ok {
			return
		}
		members, err := decodeMembers(raw)
		if err != nil {
			ps.errs.Add(base, "must be an object of header names to string values")
			return
		}
		list = headerList(base, members)
	}

	out := map[string]string{}
	for _, h := range list {
		if !isToken(h.name) {
			ps.errs.Add(h.path, "is not a valid header name")
			continue
		}
		key := textproto.CanonicalMIMEHeaderKey(h.name)
		if _, dup := out[key]; dup {
			ps.errs.Add(h.path, "is sent twice (header names are case-insensitive)")
			continue
		}
		out[key] = ""
		if forbiddenHeader(h.name) {
			ps.errs.Add(h.path, "cannot be set: hop-by-hop, framing and proxy headers are controlled by the browser")
			continue
		}
		if !h.isString {
			ps.errs.Add(h.path, "must be a string")
			continue
		}
		value := strings.Trim(h.value, " \t")
		if problem := checkHeaderValue(value); problem != "" {
			ps.errs.Add(h.path, "%s", problem)
			continue
		}
		out[key] = value
	}
	if len(out) > MaxHeaders {
		ps.errs.Add(base, "must name at most %d headers, got %d", MaxHeaders, len(out))
	}
	if len(out) > 0 {
		ps.p.Headers = out
	}
}

func headerList(base string, members []member) []header {
	list := make([]header, 0, len(members))
	for _, mb := range members {
		h := header{name: mb.key, path: base + "." + mb.key}
		if err := json.Unmarshal(mb.value, &h.value); err == nil && !isNull(mb.value) {
			h.isString = true
		}
		list = append(list, h)
	}
	return list
}

func (ps *parser) additionalHeaderOrigins() {
	const name = "additional_header_origins"
	if !ps.sentList(name) {
		return
	}
	values, ok := ps.o.StringArray(&ps.errs, name)
	if !ok {
		return
	}
	seen := map[string]bool{}
	for i, v := range values {
		if ps.o.IsForm() && v == "" {
			continue
		}
		where := fmt.Sprintf("%s[%d]", ps.path(name), i)
		if ps.o.IsForm() && !utf8.ValidString(v) {
			ps.errs.Add(where, "must be valid UTF-8 text")
			continue
		}
		origin, problem := normalizeOrigin(v)
		if problem != "" {
			ps.errs.Add(where, "%s", problem)
			continue
		}
		if !seen[origin] {
			seen[origin] = true
			ps.p.AdditionalHeaderOrigins = append(ps.p.AdditionalHeaderOrigins, origin)
		}
	}
	if len(seen) > MaxAdditionalHeaderOrigins {
		ps.fail(name, "must hold at most %d unique origins, got %d", MaxAdditionalHeaderOrigins, len(seen))
	}
	slices.Sort(ps.p.AdditionalHeaderOrigins)
}

func (ps *parser) metadata() {
	members, ok := ps.members("metadata")
	if !ok {
		return
	}
	base := ps.path("metadata")
	if len(members) > MaxMetadataEntries {
		ps.errs.Add(base, "must hold at most %d entries, got %d", MaxMetadataEntries, len(members))
	}
	out := make(map[string]string, len(members))
	for _, mb := range members {
		where := base + "." + mb.key
		if _, dup := out[mb.key]; dup {
			ps.errs.Add(where, "is sent twice")
			continue
		}
		var v string
		if err := json.Unmarshal(mb.value, &v); err != nil || isNull(mb.value) {
			ps.errs.Add(where, "must be a string")
			out[mb.key] = ""
			continue
		}
		if n := utf8.RuneCountInString(mb.key); n < 1 || n > MaxMetadataKeyLength {
			ps.errs.Add(where, "key must be 1 to %d characters, got %d", MaxMetadataKeyLength, n)
		}
		if n := utf8.RuneCountInString(v); n > MaxMetadataValueLength {
			ps.errs.Add(where, "must be at most %d characters, got %d", MaxMetadataValueLength, n)
		}
		out[mb.key] = v
	}
	if len(out) > 0 {
		ps.p.Metadata = out
	}
}

// Field access.

func (ps *parser) path(name string) string { return ps.o.Path(name) }

func (ps *parser) fail(name, format string, args ...any) {
	ps.errs.Add(ps.path(name), format, args...)
}

// sent reports whether a field carries a value: present and not null in
// JSON; present with a non-empty (last) value in a form.
func (ps *parser) sent(name string) bool {
	if ps.o.IsForm() {
		vs := ps.o.FormValues(name)
		return len(vs) > 0 && vs[len(vs)-1] != ""
	}
	return ps.o.Present(name)
}

// sentList is sent for repeatable form fields: some value is non-empty.
func (ps *parser) sentList(name string) bool {
	if ps.o.IsForm() {
		return slices.ContainsFunc(ps.o.FormValues(name), func(v string) bool { return v != "" })
	}
	return ps.o.Present(name)
}

func (ps *parser) str(name string) (string, bool) {
	if !ps.sent(name) {
		return "", false
	}
	s, ok := ps.o.String(&ps.errs, name)
	if ok && ps.o.IsForm() && !utf8.ValidString(s) {
		ps.fail(name, "must be valid UTF-8 text")
		return "", false
	}
	return s, ok
}

func (ps *parser) boolean(name string) bool {
	if !ps.sent(name) {
		return false
	}
	v, _ := ps.o.Bool(&ps.errs, name)
	return v
}

func (ps *parser) integer(name string, min, max int64) (int64, bool) {
	if !ps.sent(name) {
		return 0, false
	}
	return ps.o.Int(&ps.errs, name, min, max)
}

func (ps *parser) float(name string, min, max float64) (float64, bool) {
	if !ps.sent(name) {
		return 0, false
	}
	return ps.o.Float(&ps.errs, name, min, max)
}

// enum reads a case-insensitive string among allowed; "" when not sent or invalid.
func (ps *parser) enum(name string, allowed ...string) string {
	s, ok := ps.str(name)
	if !ok {
		return ""
	}
	v := strings.ToLower(strings.TrimSpace(s))
	if !slices.Contains(allowed, v) {
		ps.fail(name, "must be one of %s", strings.Join(allowed, ", "))
		return ""
	}
	return v
}

// pair reads two integers that must be sent together.
func (ps *parser) pair(wName, hName string, min, max int64) *Size {
	wSent, hSent := ps.sent(wName), ps.sent(hName)
	w, wOK := ps.integer(wName, min, max)
	h, hOK := ps.integer(hName, min, max)
	switch {
	case wSent && !hSent:
		ps.fail(hName, "is required with %s", wName)
	case hSent && !wSent:
		ps.fail(wName, "is required with %s", hName)
	case wOK && hOK:
		return &Size{Width: int(w), Height: int(h)}
	}
	return nil
}

func (ps *parser) id(name string) string {
	s, ok := ps.str(name)
	if !ok {
		return ""
	}
	switch n := utf8.RuneCountInString(s); {
	case strings.TrimSpace(s) == "":
		ps.fail(name, "must not be blank")
	case n > MaxIDLength:
		ps.fail(name, "must be at most %d characters, got %d", MaxIDLength, n)
	}
	return s
}

// rawObject returns the JSON text of an object field: the JSON value, or in
// a form the (JSON-encoded) string. Only the first byte is checked here.
func (ps *parser) rawObject(name string) ([]byte, bool) {
	if !ps.sent(name) {
		return nil, false
	}
	if ps.o.IsForm() {
		vs := ps.o.FormValues(name)
		return []byte(vs[len(vs)-1]), true
	}
	raw, _ := ps.o.Raw(name)
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		ps.fail(name, "%s", ps.objectProblem())
		return nil, false
	}
	return raw, true
}

// members decodes an object field in order.
func (ps *parser) members(name string) ([]member, bool) {
	raw, ok := ps.rawObject(name)
	if !ok {
		return nil, false
	}
	members, err := decodeMembers(raw)
	if err != nil {
		ps.fail(name, "%s", ps.objectProblem())
		return nil, false
	}
	return members, true
}

func (ps *parser) objectProblem() string {
	if ps.o.IsForm() {
		return "must be a JSON-encoded object"
	}
	return "must be an object"
}
