package ogpage

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/imageparams"
)

// Prefixes of the meta names that carry instructions for Pictor.
const (
	// PrefixOverride names a render override: hcti:<param>.
	PrefixOverride = "hcti:"
	// PrefixOverrideAlias is the other spelling of PrefixOverride.
	PrefixOverrideAlias = "pictor:"
	// PrefixTemplateValue names a template value: html:tv:<var>.
	PrefixTemplateValue = "html:tv:"
)

// Kinds of Head.Fallback, as template_values_mapping names them.
const (
	FallbackTitles       = "titles"
	FallbackDescriptions = "descriptions"
)

// overrideParams are the render parameters a page may override with
// hcti:<param> or pictor:<param>.
var overrideParams = []string{
	"selector", "css", "ms_delay", "max_wait_ms", "render_when_ready", "transparent_background",
	"viewport_width", "viewport_height", "device_scale", "color_scheme", "media_type", "timezone",
	"block_consent_banners", "content_version",
}

// Bounds of what a head keeps, whatever the page holds.
const (
	maxMeta           = 1024 // distinct keys of Head.Meta, beyond the named ones
	maxTemplateValues = 1024 // entries of Head.TemplateValues
	maxIgnored        = 100  // entries of Head.Ignored; the rest are counted
	maxReportedKey    = 200  // bytes of a key quoted in Head.Ignored
	charsetPeek       = 1024 // bytes read to find the encoding, as browsers do
)

// Ignored is a meta value the head holds but that was not used.
type Ignored struct {
	// Key is the meta name as lower-cased, e.g. "hcti:ms_delay" (cut to
	// 200 bytes).
	Key string
	// Reason says why, e.g. "must be between 0 and 10000".
	Reason string
}

// Head is what a page's <head> says.
type Head struct {
	// Title is the first <title>, with entities decoded and runs of ASCII
	// whitespace collapsed to one space, as document.title reads it.
	Title string
	// Description and the og: and twitter: fields are the first meta of that
	// name, whitespace collapsed as in Title.
	Description        string
	OGTitle            string
	OGDescription      string
	OGSiteName         string
	TwitterTitle       string
	TwitterDescription string
	// OGURL and OGImage are og:url and og:image as written, trimmed.
	OGURL   string
	OGImage string

	// Meta holds every <meta> with a name= or property= attribute and a
	// content= attribute: key lower-cased and trimmed, value as written
	// (entities decoded). The first value of a key wins; a meta with both
	// attributes counts under each.
	Meta map[string]string
	// Overrides holds the valid render overrides, by parameter name
	// ("ms_delay"), raw as written: the caller merges them into the
	// configuration's default options. The first meta naming a parameter,
	// under either prefix, decides; an invalid one is reported in Ignored
	// and overrides nothing.
	Overrides map[string]string
	// ContentVersion is the content_version override, when it is an
	// integer.
	ContentVersion *int64
	// TemplateValues holds html:tv:<var> values by <var>, whose case is
	// kept: the JSON value when the content is valid JSON, else the
	// content as a JSON string.
	TemplateValues map[string]json.RawMessage

	// Ignored lists what was not used, for the caller to log: unknown
	// override parameters, invalid values, repeated overrides and template
	// values, metas beyond the bounds. IgnoredMore counts those beyond the
	// first 100.
	Ignored     []Ignored
	IgnoredMore int
}

// Fallback returns the first non-empty value of a kind: for
// FallbackTitles og:title, twitter:title, then <title>; for
// FallbackDescriptions og:description, twitter:description, then the
// description meta. It is "" when none is set or the kind is unknown.
func (h Head) Fallback(kind string) string {
	var candidates []string
	switch kind {
	case FallbackTitles:
		candidates = []string{h.OGTitle, h.TwitterTitle, h.Title}
	case FallbackDescriptions:
		candidates = []string{h.OGDescription, h.TwitterDescription, h.Description}
	}
	for _, v := range candidates {
		if v != "" {
			return v
		}
	}
	return ""
}

// namedMeta are the keys Head has fields for; they are kept in Meta even
// beyond its bound.
var namedMeta = map[string]bool{
	"description": true, "og:title": true, "og:description": true, "og:url": true, "og:site_name": true,
	"og:image": true, "twitter:title": true, "twitter:description": true,
}

// parseHead reads the head of the HTML document in r, decoded as
// contentType, BOMs and <meta charset> say (UTF-8 when none does). It stops
// where a browser's head ends: </head>, <body>, </body>, </html>, or the
// first start tag that cannot be in a head and so opens the body. Text
// between head elements is skipped rather than taken as the body's start.
// ended reports that it stopped there rather than at the end of r; err is a
// read error of r other than io.EOF. Its work is linear in what it reads.
func parseHead(r io.Reader, contentType string) (h Head, ended bool, err error) {
	br := bufio.NewReaderSize(r, 4096)
	peek, err := br.Peek(charsetPeek)
	if err != nil && !errors.Is(err, io.EOF) {
		return Head{}, false, err
	}
	p := headParser{
		meta:      map[string]string{},
		overrides: map[string]string{},
		values:    map[string]json.RawMessage{},
		seen:      map[string]bool{},
	}
	z := html.NewTokenizer(decode(br, peek, contentType))
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if err := z.Err(); !errors.Is(err, io.EOF) {
				return p.finish(), false, err
			}
			return p.finish(), false, nil
		case html.TextToken:
			if p.inTitle && !p.titleDone {
				p.title = append(p.title, z.Text()...)
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			// A "/>" changes nothing on an element that is not void: a
			// <title/> or <template/> opens one, as in a browser.
			name, hasAttr := z.TagName()
			if p.template > 0 {
				if string(name) == "template" {
					p.template++
				}
				continue
			}
			switch string(name) {
			case "html", "head", "base", "basefont", "bgsound", "link", "noscript", "noframes", "script", "style":
				// The tokenizer reads the raw text of script, style,
				// noscript and noframes as text, never as tags.
			case "meta":
				if hasAttr {
					p.readMeta(z)
				}
			case "title":
				p.inTitle = true
			case "template":
				// Its content is inert: a meta inside is not the page's.
				p.template++
			default:
				return p.finish(), true, nil
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			if p.template > 0 {
				if string(name) == "template" {
					p.template--
				}
				continue
			}
			switch string(name) {
			case "title":
				if p.inTitle {
					p.inTitle, p.titleDone = false, true
				}
			case "head", "body", "html", "br":
				return p.finish(), true, nil
			}
		}
	}
}

// decode returns r as UTF-8. The encoding is the BOM's, else the charset of
// contentType, else one a <meta> in the first KiB declares; when none says,
// it is windows-1252 if the first KiB is not valid UTF-8, else UTF-8.
// (Browsers would take windows-1252 for an undeclared page whose first KiB
// is ASCII too; today such a page is nearly always UTF-8.)
func decode(r io.Reader, peek []byte, contentType string) io.Reader {
	enc, name, certain := charset.DetermineEncoding(peek, contentType)
	if name == "utf-8" || (!certain && name == "windows-1252" && validUTF8Start(peek) && !declaresCharset(peek)) {
		return r
	}
	return enc.NewDecoder().Reader(r)
}

// validUTF8Start reports whether b is valid UTF-8 but for a rune cut at
// its end.
func validUTF8Start(b []byte) bool {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				b = b[:i]
			}
			break
		}
	}
	return utf8.Valid(b)
}

// declaresCharset reports whether the start of a document holds a meta
// charset= or http-equiv=content-type meta.
func declaresCharset(b []byte) bool {
	z := html.NewTokenizer(bytes.NewReader(b))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return false
		case html.StartTagToken, html.SelfClosingTagToken:
			name, more := z.TagName()
			if string(name) != "meta" {
				continue
			}
			for more {
				var k, v []byte
				k, v, more = z.TagAttr()
				if string(k) == "charset" || (string(k) == "http-equiv" && strings.EqualFold(string(v), "content-type")) {
					return true
				}
			}
		}
	}
}

type headParser struct {
	meta      map[string]string
	overrides map[string]string
	version   *int64
	values    map[string]json.RawMessage
	seen      map[string]bool // override parameters met, valid or not
	ignored   []Ignored
	more      int

	title     []byte
	inTitle   bool
	titleDone bool
	template  int // depth of <template> elements
}

// readMeta reads a <meta> start tag's attributes. The tokenizer keeps the
// first of repeated attributes, as browsers do, lower-cases their names and
// decodes entities in their values.
func (p *headParser) readMeta(z *html.Tokenizer) {
	var names [2][]byte // name=, property=
	var content []byte
	hasContent := false
	for more := true; more; {
		var k, v []byte
		k, v, more = z.TagAttr()
		switch string(k) {
		case "name":
			names[0] = v
		case "property":
			names[1] = v
		case "content":
			content, hasContent = v, true
		}
	}
	first := ""
	for _, n := range names {
		raw := text(trimASCIISpace(n))
		key := strings.ToLower(raw)
		if key == "" || key == first {
			continue
		}
		first = key
		if !hasContent {
			if isInstruction(key) {
				p.ignore(key, "has no content attribute")
			}
			continue
		}
		p.add(key, raw, text(content))
	}
}

// isInstruction reports a key Pictor reads instructions from.
func isInstruction(key string) bool {
	return strings.HasPrefix(key, PrefixOverride) || strings.HasPrefix(key, PrefixOverrideAlias) ||
		strings.HasPrefix(key, PrefixTemplateValue)
}

// add records one meta value under key (lower-cased); raw is the key as
// written, whose case template variable names keep.
func (p *headParser) add(key, raw, value string) {
	if _, ok := p.meta[key]; !ok {
		if len(p.meta) < maxMeta || namedMeta[key] {
			p.meta[key] = value
		} else if !isInstruction(key) {
			p.ignore(key, "too many meta names; this one is not kept")
		}
	}
	switch {
	case strings.HasPrefix(key, PrefixOverride):
		p.override(key, key[len(PrefixOverride):], value)
	case strings.HasPrefix(key, PrefixOverrideAlias):
		p.override(key, key[len(PrefixOverrideAlias):], value)
	case strings.HasPrefix(key, PrefixTemplateValue):
		name := key[len(PrefixTemplateValue):]
		if len(raw) >= len(PrefixTemplateValue) && strings.EqualFold(raw[:len(PrefixTemplateValue)], PrefixTemplateValue) {
			name = raw[len(PrefixTemplateValue):] // the case as written
		}
		p.templateValue(key, name, value)
	}
}

// override records the render override param.
func (p *headParser) override(key, param, value string) {
	if !slices.Contains(overrideParams, param) {
		p.ignore(key, "is not a parameter a page may override")
		return
	}
	if p.seen[param] {
		p.ignore(key, "is set more than once; the first one is used")
		return
	}
	p.seen[param] = true
	if strings.TrimSpace(value) == "" {
		p.ignore(key, "is empty")
		return
	}
	if param == "content_version" {
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
		if err != nil {
			p.ignore(key, "must be an integer")
			return
		}
		p.version = &n
		p.overrides[param] = value
		return
	}
	if problem := checkOverride(param, value); problem != "" {
		p.ignore(key, problem)
		return
	}
	p.overrides[param] = value
}

// checkOverride validates one override as the image API validates the
// parameter sent in a form, so that page values follow the same rules; it
// returns the problem, or "". The plan's cap on max_wait_ms is the
// caller's to apply. A viewport side is checked as a square of that side:
// the other side may come from the configuration's defaults.
func checkOverride(param, value string) string {
	form := url.Values{param: {value}}
	switch param {
	case "viewport_width":
		form.Set("viewport_height", value)
	case "viewport_height":
		form.Set("viewport_width", value)
	}
	_, err := imageparams.Parse(field.FromForm(form), imageparams.Options{})
	if err == nil {
		return ""
	}
	var ae *apierr.Error
	if errors.As(err, &ae) && len(ae.Fields) > 0 {
		return ae.Fields[0].Message
	}
	return "is not valid"
}

// templateValue records html:tv:<name>.
func (p *headParser) templateValue(key, name, value string) {
	switch _, dup := p.values[name]; {
	case name == "":
		p.ignore(key, "names no template variable")
	case dup:
		p.ignore(key, "is set more than once; the first one is used")
	case len(p.values) >= maxTemplateValues:
		p.ignore(key, "too many template values; this one is not kept")
	default:
		p.values[name] = jsonValue(value)
	}
}

// jsonValue is s when it is a JSON text, else s as a JSON string.
func jsonValue(s string) json.RawMessage {
	if t := strings.Trim(s, " \t\r\n"); t != "" && json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	b, _ := json.Marshal(s)
	return b
}

func (p *headParser) ignore(key, reason string) {
	if len(p.ignored) >= maxIgnored {
		p.more++
		return
	}
	if len(key) > maxReportedKey {
		key = strings.ToValidUTF8(key[:maxReportedKey], "")
	}
	p.ignored = append(p.ignored, Ignored{Key: key, Reason: reason})
}

// finish returns the head read so far.
func (p *headParser) finish() Head {
	h := Head{
		Title:              collapse(text(p.title)),
		Description:        collapse(p.meta["description"]),
		OGTitle:            collapse(p.meta["og:title"]),
		OGDescription:      collapse(p.meta["og:description"]),
		OGSiteName:         collapse(p.meta["og:site_name"]),
		TwitterTitle:       collapse(p.meta["twitter:title"]),
		TwitterDescription: collapse(p.meta["twitter:description"]),
		OGURL:              string(trimASCIISpace([]byte(p.meta["og:url"]))),
		OGImage:            string(trimASCIISpace([]byte(p.meta["og:image"]))),
		ContentVersion:     p.version,
		Ignored:            p.ignored,
		IgnoredMore:        p.more,
	}
	if len(p.meta) > 0 {
		h.Meta = p.meta
	}
	if len(p.overrides) > 0 {
		h.Overrides = p.overrides
	}
	if len(p.values) > 0 {
		h.TemplateValues = p.values
	}
	return h
}

// text is b as a string, invalid UTF-8 replaced.
func text(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return string(bytes.ToValidUTF8(b, []byte("\uFFFD")))
}

// isASCIISpace is HTML's ASCII whitespace.
func isASCIISpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}

func trimASCIISpace(b []byte) []byte {
	for len(b) > 0 && isASCIISpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isASCIISpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// collapse strips s and collapses each run of ASCII whitespace to one
// space, as document.title does.
func collapse(s string) string {
	var b strings.Builder
	space := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isASCIISpace(c) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteByte(c)
	}
	return b.String()
}
