package ogconfig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/egress"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/resource"
)

// Field limits and defaults of an OG configuration request (compat.md,
// "OG configurations"; the choices of doc.go where it is silent).
const (
	MaxName        = 255  // name, characters
	MaxDescription = 1023 // description, characters

	DefaultRefreshInterval = 86400 * time.Second
	MinRefreshInterval     = 60 * time.Second
	MaxRefreshInterval     = 31536000 * time.Second // one year

	MaxMappings          = 32  // template_values_mapping entries
	MaxTemplateKeyLength = 100 // template_key, characters
	MaxMetaKeyLength     = 255 // meta_key, characters
	MaxTemplateVersion   = 1<<31 - 1

	// Custom headers follow the limits of image creation (spec §8), so
	// that every configuration is one the render path accepts.
	MaxHeaders                 = imageparams.MaxHeaders
	MaxAdditionalHeaderOrigins = imageparams.MaxAdditionalHeaderOrigins

	// MaxNewImages bounds max_new_images_per_day and
	// max_new_images_per_period whatever the plan (the plan's credits per
	// billing period bound them first).
	MaxNewImages = 1<<31 - 1
)

// Output limits of a render without jumbo, in device pixels: the values of
// origin/rendition's MaxSide and MaxPixels, which this package does not import
// (origin/rendition links libvips).
const (
	maxSide   = 16384
	maxPixels = 64_000_000
)

// OptionNames are the image creation parameters default_options may hold:
// what shapes the capture of one page. The page's own hcti: overrides
// (compat.md) are a subset.
var OptionNames = []string{
	"block_consent_banners", "color_scheme", "css", "device_scale", "disable_twemoji",
	"google_fonts", "identify_as_service", "include_headers_on_subrequests", "max_wait_ms",
	"media_type", "ms_delay", "render_when_ready", "selector", "timezone",
	"transparent_background", "viewport_height", "viewport_landscape", "viewport_mobile",
	"viewport_touch", "viewport_width",
}

// notOptions are the other creation parameters, refused in default_options
// with the reason. Names that are no creation parameter are ignored, as
// unknown fields are everywhere in the API.
var notOptions = map[string]string{
	"html":                      "the source of an OG image is the page of base_url (or the template)",
	"url":                       "the source of an OG image is the page of base_url (or the template)",
	"template_id":               "set template_id at the top level of the configuration",
	"template_version":          "set template_version at the top level of the configuration",
	"template_values":           "template values come from the page (template_values_mapping and html:tv: meta tags)",
	"headers":                   "set headers at the top level of the configuration",
	"additional_header_origins": "set additional_header_origins at the top level of the configuration",
	"format":                    "the format of an OG image is chosen when it is fetched",
	"pdf_options":               "OG images are not PDFs",
	"full_screen":               "OG images have the platforms' sizes",
	"jumbo_max_width":           "OG images have the platforms' sizes",
	"jumbo_max_height":          "OG images have the platforms' sizes",
	"dedupe_duration_s":         "OG images are reused according to refresh_interval_s",
	"metadata":                  "OG images are not listed among the organization's images",
	"proxy_id":                  "OG configurations cannot use a proxy",
	"storage_destination_id":    "OG images are not written to storage destinations",
}

// Options adapt ParseRequest to the caller.
type Options struct {
	// MaxWaitCap is the organization's plan cap on
	// default_options.max_wait_ms; 0 means none.
	MaxWaitCap time.Duration
	// AllowPrivate accepts a base_url whose host is a loopback or private
	// address literal (--allow-private-urls).
	AllowPrivate bool
	// PlanCredits is the organization's plan's credits per billing
	// period: the most max_new_images_per_day and
	// max_new_images_per_period may be. 0 bounds them by MaxNewImages
	// only.
	PlanCredits int64
}

// Request is a validated create or update request; an update is a full
// replacement, so omitted optional fields hold their defaults.
type Request struct {
	ConfigType              ConfigType
	Name                    string
	Description             string
	BaseURL                 string
	Disabled                bool
	RefreshInterval         time.Duration
	OptimizationMode        OptimizationMode
	ExtractValues           bool
	DefaultOptions          map[string]json.RawMessage
	TemplateID              string
	TemplateVersion         int
	Mapping                 []Mapping
	Headers                 map[string]string
	AdditionalHeaderOrigins []string
	// MaxNewImagesPerDay and MaxNewImagesPerPeriod are nil for the
	// default (null or not sent).
	MaxNewImagesPerDay    *int64
	MaxNewImagesPerPeriod *int64
}

// ParseRequest validates a configuration request from a JSON object or a
// form and reports every invalid field in one 400. JSON types are strict;
// form values are text, and an empty one counts as not sent. Unknown fields
// are ignored.
func ParseRequest(o *field.Object, opts Options) (Request, error) {
	var errs field.Errors
	rd := reader{resource.Reader{O: o, Errs: &errs}}
	req := Request{
		RefreshInterval:  DefaultRefreshInterval,
		OptimizationMode: PostProcess,
		ExtractValues:    true,
		DefaultOptions:   map[string]json.RawMessage{},
	}

	switch s, ok := rd.Str("config_type"); {
	case !ok && !rd.Sent("config_type"):
		errs.Add(o.Path("config_type"), "is required: %s or %s", HTMLCSS, Templated)
	case !ok:
	case s == string(HTMLCSS) || s == string(Templated):
		req.ConfigType = ConfigType(s)
	default:
		errs.Add(o.Path("config_type"), "must be %s or %s", HTMLCSS, Templated)
	}
	if s, ok := rd.Str("name"); ok && strings.TrimSpace(s) != "" {
		if n := utf8.RuneCountInString(s); n > MaxName {
			errs.Add(o.Path("name"), "must be at most %d characters (got %d)", MaxName, n)
		}
		req.Name = s
	}
	if s, ok := rd.Str("description"); ok && strings.TrimSpace(s) != "" {
		if n := utf8.RuneCountInString(s); n > MaxDescription {
			errs.Add(o.Path("description"), "must be at most %d characters (got %d)", MaxDescription, n)
		}
		req.Description = s
	}
	switch s, ok := rd.Str("base_url"); {
	case !ok && !rd.Sent("base_url"):
		errs.Add(o.Path("base_url"), "is required: the exact origin of the site, such as https://example.com")
	case ok:
		norm, problem := parseBaseURL(s)
		if problem == "" {
			problem = checkHost(norm, opts.AllowPrivate)
		}
		if problem != "" {
			errs.Add(o.Path("base_url"), "%s", problem)
		}
		req.BaseURL = norm
	}
	if v, ok := rd.Bool("disabled"); ok {
		req.Disabled = v
	}
	if v, ok := rd.Bool("extract_values"); ok {
		req.ExtractValues = v
	}
	if rd.Sent("refresh_interval_s") {
		if n, ok := o.Int(&errs, "refresh_interval_s", int64(MinRefreshInterval/time.Second), int64(MaxRefreshInterval/time.Second)); ok {
			req.RefreshInterval = time.Duration(n) * time.Second
		}
	}
	if s, ok := rd.Str("optimization_mode"); ok {
		switch m := OptimizationMode(s); m {
		case NoOptimization, PostProcess, SetViewport:
			req.OptimizationMode = m
		default:
			errs.Add(o.Path("optimization_mode"), "must be one of %s, %s, %s", NoOptimization, PostProcess, SetViewport)
		}
	}
	req.DefaultOptions = rd.defaultOptions(req.ConfigType, opts)
	rd.template(&req)
	req.Mapping = rd.mapping()
	if req.ConfigType == HTMLCSS && len(req.Mapping) > 0 {
		errs.Add(o.Path("template_values_mapping"), "is only for %s configurations", Templated)
	}
	req.Headers, req.AdditionalHeaderOrigins = rd.headers()
	req.MaxNewImagesPerDay = rd.imageCap("max_new_images_per_day", opts.PlanCredits)
	req.MaxNewImagesPerPeriod = rd.imageCap("max_new_images_per_period", opts.PlanCredits)
	return req, errs.Err()
}

// imageCap reads a cap on new images: an integer from 0 to the plan's
// credits per billing period, nil when null or not sent (the default).
func (rd reader) imageCap(name string, planCredits int64) *int64 {
	if !rd.Sent(name) {
		return nil
	}
	n, ok := rd.O.Int(rd.Errs, name, 0, MaxNewImages)
	if !ok {
		return nil
	}
	if planCredits > 0 && n > planCredits {
		rd.Errs.Add(rd.O.Path(name), "must be at most %d, the plan's image credits per billing period (null: the default)", planCredits)
		return nil
	}
	return &n
}

// reader reads top-level fields (resource.Reader).
type reader struct{ resource.Reader }

// jsonValue returns the JSON of an object or array field: the value in
// JSON, the (JSON-encoded) text in a form.
func (rd reader) jsonValue(name string) ([]byte, bool) {
	if !rd.Sent(name) {
		return nil, false
	}
	if rd.O.IsForm() {
		vs := rd.O.FormValues(name)
		return []byte(vs[len(vs)-1]), true
	}
	raw, _ := rd.O.Raw(name)
	return raw, true
}

// encoded is how an object or array field must be written.
func (rd reader) encoded(what string) string {
	if rd.O.IsForm() {
		return "a JSON-encoded " + what
	}
	return "an " + what
}

// parseBaseURL checks an exact http(s) origin and normalizes it to
// scheme://host[:port]: lower-case, without a default port, an empty or
// "/" path dropped; anything else after the authority (path, query,
// fragment), credentials, a non-ASCII host and a bad port are refused.
// These are imageparams' rules for additional_header_origins, applied by
// imageparams itself so that base_url and those origins compare equal when
// the render decides where custom headers go. problem is "" when s is
// valid.
func parseBaseURL(s string) (norm, problem string) {
	const bad = "must be an exact origin (scheme://host[:port]) such as https://example.com"
	raw, err := json.Marshal([]string{s})
	if err != nil {
		return "", bad
	}
	p, err := imageparams.Parse(field.FromJSON(map[string]json.RawMessage{"additional_header_origins": raw}), imageparams.Options{})
	if err != nil {
		var ae *apierr.Error
		if errors.As(err, &ae) && len(ae.Fields) > 0 {
			return "", ae.Fields[0].Message
		}
		return "", bad
	}
	if len(p.AdditionalHeaderOrigins) != 1 {
		return "", bad
	}
	return p.AdditionalHeaderOrigins[0], ""
}

// checkHost refuses an origin whose host is an address literal or local
// name the egress refuses (names that need DNS are the egress's business at
// render time), as image creation does for url.
func checkHost(origin string, allowPrivate bool) string {
	_, err := egress.CheckURL(context.Background(), resource.NoLookup, origin, allowPrivate)
	if errors.Is(err, egress.ErrBlockedAddress) {
		return fmt.Sprintf("is not allowed: %v", err)
	}
	return ""
}

// defaultOptions validates default_options as image creation parameters
// and returns them normalized.
func (rd reader) defaultOptions(typ ConfigType, opts Options) map[string]json.RawMessage {
	const name = "default_options"
	out := map[string]json.RawMessage{}
	raw, ok := rd.jsonValue(name)
	if !ok {
		return out
	}
	path := rd.O.Path(name)
	var m map[string]json.RawMessage
	if t := strings.TrimSpace(string(raw)); !strings.HasPrefix(t, "{") || json.Unmarshal(raw, &m) != nil {
		rd.Errs.Add(path, "must be %s of image creation parameters", rd.encoded("object"))
		return out
	}
	allowed := map[string]json.RawMessage{}
	for k, v := range m {
		switch {
		case slices.Contains(OptionNames, k):
			allowed[k] = v
		case notOptions[k] != "":
			rd.Errs.Add(path+"."+k, "cannot be set in default_options: %s", notOptions[k])
		}
	}
	sub := field.FromJSON(allowed)
	sub.Prefix = path + "."
	p, err := imageparams.Parse(sub, imageparams.Options{MaxWaitCap: opts.MaxWaitCap})
	if err != nil {
		var ae *apierr.Error
		if !errors.As(err, &ae) {
			rd.Errs.Add(path, "%v", err)
			return out
		}
		for _, f := range ae.Fields {
			rd.Errs.Add(f.Path, "%s", f.Message)
		}
		return out
	}
	if p.Viewport != nil {
		scale := p.RequestedDeviceScale
		if scale == 0 {
			scale = 2 // an HTML render's default: the templated case, and the stricter
			if typ == HTMLCSS {
				scale = 1 // a URL render's default
			}
		}
		w, h := float64(p.Viewport.Width)*scale, float64(p.Viewport.Height)*scale
		switch {
		case w > maxSide || h > maxSide:
			rd.Errs.Add(sub.Path("viewport_width"), "times device_scale exceeds %d pixels; lower device_scale", maxSide)
		case w*h > maxPixels:
			rd.Errs.Add(sub.Path("viewport_width"), "times viewport_height and device_scale squared is %.0f megapixels; the limit is %d",
				w*h/1e6, maxPixels/1_000_000)
		}
	}
	return encodeOptions(&p)
}

// encodeOptions writes the default_options parts of p as typed JSON,
// leaving out what equals the default. imageparams.Parse reads the result
// back into the same Params.
func encodeOptions(p *imageparams.Params) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	put := func(name string, v any) {
		out[name], _ = json.Marshal(v)
	}
	flag := func(name string, v bool) {
		if v {
			put(name, true)
		}
	}
	text := func(name, v string) {
		if v != "" {
			put(name, v)
		}
	}
	if p.Viewport != nil {
		put("viewport_width", p.Viewport.Width)
		put("viewport_height", p.Viewport.Height)
	}
	if p.RequestedDeviceScale != 0 {
		put("device_scale", p.RequestedDeviceScale)
	}
	flag("viewport_mobile", p.ViewportMobile)
	flag("viewport_landscape", p.ViewportLandscape)
	flag("viewport_touch", p.ViewportTouch)
	text("media_type", string(p.MediaType))
	text("color_scheme", string(p.ColorScheme))
	text("timezone", p.Timezone)
	text("selector", p.Selector)
	text("css", p.CSS)
	if len(p.GoogleFonts) > 0 {
		put("google_fonts", strings.Join(p.GoogleFonts, "|"))
	}
	if p.Delay > 0 {
		put("ms_delay", p.Delay.Milliseconds())
	}
	if p.MaxWait > 0 {
		put("max_wait_ms", p.MaxWait.Milliseconds())
	}
	flag("render_when_ready", p.RenderWhenReady)
	flag("block_consent_banners", p.BlockConsentBanners)
	if p.DisableTwemoji != nil {
		put("disable_twemoji", *p.DisableTwemoji)
	}
	flag("transparent_background", p.TransparentBackground)
	flag("include_headers_on_subrequests", p.IncludeHeadersOnSubrequests)
	flag("identify_as_service", p.IdentifyAsService)
	return out
}

// template reads template_id and template_version: required (the id) for
// templated configurations, refused for html_css ones.
func (rd reader) template(req *Request) {
	o := rd.O
	if req.ConfigType == HTMLCSS {
		for _, name := range []string{"template_id", "template_version"} {
			if rd.Sent(name) {
				rd.Errs.Add(o.Path(name), "is only for %s configurations", Templated)
			}
		}
		return
	}
	if s, ok := rd.Str("template_id"); ok {
		switch n := utf8.RuneCountInString(s); {
		case !strings.HasPrefix(s, "t-") || len(s) == len("t-"):
			rd.Errs.Add(o.Path("template_id"), "must be a template id (t-...)")
		case n > imageparams.MaxIDLength:
			rd.Errs.Add(o.Path("template_id"), "must be at most %d characters (got %d)", imageparams.MaxIDLength, n)
		}
		req.TemplateID = s
	}
	if rd.Sent("template_version") {
		if n, ok := o.Int(rd.Errs, "template_version", 1, MaxTemplateVersion); ok {
			req.TemplateVersion = int(n)
		}
	}
	if req.ConfigType == Templated && !rd.Sent("template_id") {
		rd.Errs.Add(o.Path("template_id"), "is required for %s configurations", Templated)
	}
}

// mapping reads template_values_mapping.
func (rd reader) mapping() []Mapping {
	const name = "template_values_mapping"
	raw, ok := rd.jsonValue(name)
	if !ok {
		return nil
	}
	path := rd.O.Path(name)
	var items []json.RawMessage
	if t := strings.TrimSpace(string(raw)); !strings.HasPrefix(t, "[") || json.Unmarshal(raw, &items) != nil {
		rd.Errs.Add(path, "must be %s of {template_key, meta_key} or {template_key, fallback} objects", rd.encoded("array"))
		return nil
	}
	if len(items) > MaxMappings {
		rd.Errs.Add(path, "must hold at most %d entries (got %d)", MaxMappings, len(items))
		return nil
	}
	var out []Mapping
	seen := map[string]bool{}
	for i, item := range items {
		where := fmt.Sprintf("%s[%d]", path, i)
		var m map[string]json.RawMessage
		if t := strings.TrimSpace(string(item)); !strings.HasPrefix(t, "{") || json.Unmarshal(item, &m) != nil {
			rd.Errs.Add(where, "must be an object {template_key, meta_key} or {template_key, fallback}")
			continue
		}
		sub := field.FromJSON(m)
		sub.Prefix = where + "."
		var mp Mapping
		valid := true
		key, ok := sub.String(rd.Errs, "template_key")
		switch n := utf8.RuneCountInString(key); {
		case !ok:
			if !sub.Present("template_key") {
				rd.Errs.Add(sub.Path("template_key"), "is required")
			}
			valid = false
		case strings.TrimSpace(key) == "" || strings.ContainsFunc(key, unicode.IsControl):
			rd.Errs.Add(sub.Path("template_key"), "must be a template variable name, not blank and without control characters")
			valid = false
		case n > MaxTemplateKeyLength:
			rd.Errs.Add(sub.Path("template_key"), "must be at most %d characters (got %d)", MaxTemplateKeyLength, n)
			valid = false
		case seen[key]:
			rd.Errs.Add(sub.Path("template_key"), "is mapped twice")
			valid = false
		default:
			seen[key] = true
			mp.TemplateKey = key
		}
		meta, hasMeta := sub.String(rd.Errs, "meta_key")
		fallback, hasFallback := sub.String(rd.Errs, "fallback")
		switch {
		case hasMeta && hasFallback, !hasMeta && !hasFallback && !sub.Present("meta_key") && !sub.Present("fallback"):
			rd.Errs.Add(where, "must have exactly one of meta_key and fallback")
			valid = false
		case hasMeta:
			switch n := utf8.RuneCountInString(meta); {
			case meta == "" || strings.ContainsFunc(meta, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
				rd.Errs.Add(sub.Path("meta_key"), "must be the name or property of a meta tag (such as og:title), without spaces")
				valid = false
			case n > MaxMetaKeyLength:
				rd.Errs.Add(sub.Path("meta_key"), "must be at most %d characters (got %d)", MaxMetaKeyLength, n)
				valid = false
			}
			mp.MetaKey = meta
		case hasFallback:
			switch f := Fallback(fallback); f {
			case FallbackTitles, FallbackDescriptions:
				mp.Fallback = f
			default:
				rd.Errs.Add(sub.Path("fallback"), "must be %s or %s", FallbackTitles, FallbackDescriptions)
				valid = false
			}
		default: // meta_key or fallback of the wrong type, already reported
			valid = false
		}
		if valid {
			out = append(out, mp)
		}
	}
	return out
}

// headers reads headers and additional_header_origins with imageparams'
// rules for image creation (names are tokens, no hop-by-hop, framing, proxy
// or Host header, values without control characters and at most 8 KiB,
// origins exact and normalized).
func (rd reader) headers() (map[string]string, []string) {
	var sub *field.Object
	names := []string{"headers", "additional_header_origins"}
	if rd.O.IsForm() {
		v := url.Values{}
		for _, n := range names {
			if vs := rd.O.FormValues(n); vs != nil {
				v[n] = vs
			}
		}
		sub = field.FromForm(v)
	} else {
		m := map[string]json.RawMessage{}
		for _, n := range names {
			if raw, ok := rd.O.Raw(n); ok {
				m[n] = raw
			}
		}
		sub = field.FromJSON(m)
	}
	sub.Prefix = rd.O.Prefix
	p, err := imageparams.Parse(sub, imageparams.Options{})
	if err != nil {
		var ae *apierr.Error
		if !errors.As(err, &ae) {
			rd.Errs.Add(rd.O.Path("headers"), "%v", err)
			return nil, nil
		}
		for _, f := range ae.Fields {
			rd.Errs.Add(f.Path, "%s", f.Message)
		}
		return nil, nil
	}
	return p.Headers, p.AdditionalHeaderOrigins
}
