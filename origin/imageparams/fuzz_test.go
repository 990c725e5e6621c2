package imageparams

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
)

func FuzzParse(f *testing.F) {
	seeds := []string{
		`{}`,
		`{"html":"<p>x</p>"}`,
		`{"url":"HTTPS://Example.com:443?x#y","html":"ignored","disable_twemoji":false}`,
		`{"url":"http://[::1]:8080","headers":{"X-A":" 1 ","cookie":"a=b"},"additional_header_origins":["https://A.com/","http://b.com:80"]}`,
		`{"template_id":"t-1","template_values":{"b":[1,2.0,"<&>"],"a":{"x":null}}}`,
		`{"html":"x","viewport_width":"800","viewport_height":600,"device_scale":"0.1","ms_delay":10000,"max_wait_ms":"5000"}`,
		`{"html":"x","pdf_options":{"page_width":"1e-7mm","page_height":"11in","margins":["0","1px","2pt","3cm"],"scale":"2","print_background":"1"}}`,
		`{"html":"x","google_fonts":"Open+Sans:wght@400;700| Roboto ","timezone":"America/New_York","selector":" #a "}`,
		`{"html":"x","metadata":{"k":"v"},"proxy_id":"p","storage_destination_id":"s","jumbo_max_width":1,"jumbo_max_height":80000,"dedupe_duration_s":"60"}`,
		`{"html":"x","format":"JPEG","media_type":"Print","color_scheme":"dark","headers":{"Host":"x"}}`,
	}
	for i, s := range seeds {
		f.Add([]byte(s), uint16(i*1000), i%2 == 0)
	}
	f.Fuzz(func(t *testing.T, body []byte, capMS uint16, requireSource bool) {
		o, err := field.ParseJSON(body)
		if err != nil {
			return
		}
		opts := Options{MaxWaitCap: time.Duration(capMS) * time.Millisecond, RequireSource: requireSource}
		p, err := Parse(o, opts)
		if err != nil {
			var e *apierr.Error
			if !errors.As(err, &e) || e.Status != 400 || len(e.Fields) == 0 {
				t.Fatalf("error %v is not a 400 with validation errors", err)
			}
			return
		}
		checkRanges(t, &p, opts)
		c := p.Canonical()
		o2, err := field.ParseJSON(c)
		if err != nil {
			t.Fatalf("Canonical %s is not a JSON object: %v", c, err)
		}
		p2, err := Parse(o2, opts)
		if err != nil {
			t.Fatalf("Canonical %s does not parse: %v (%v)", c, err, errorPathsOrNil(err))
		}
		if c2 := p2.Canonical(); string(c2) != string(c) {
			t.Fatalf("Canonical not stable:\n%s\n%s", c, c2)
		}
	})
}

// FuzzParseForm does the same for forms and signed-URL query strings.
func FuzzParseForm(f *testing.F) {
	seeds := []string{
		"html=x",
		"url=HTTPS://Example.com:443&html=x&headers=X-A:%201&headers=x-b:2&additional_header_origins=https://a.com/",
		"template_id=t-1&template_values=%7B%22b%22:1,%22a%22:%5B%5D%7D",
		"html=x&viewport_width=800&viewport_height=&device_scale=1.5&pdf_options=%7B%22margins%22:%5B%220%22,%221in%22,%220%22,%220%22%5D%7D",
		"html=x&headers=%7B%22X-A%22:%221%22%7D&metadata=%7B%22k%22:%22v%22%7D&google_fonts=Open%2BSans|Roboto&disable_twemoji=0",
	}
	for i, s := range seeds {
		f.Add(s, uint16(i*2000), i%2 == 1)
	}
	f.Fuzz(func(t *testing.T, query string, capMS uint16, requireSource bool) {
		v, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		opts := Options{MaxWaitCap: time.Duration(capMS) * time.Millisecond, RequireSource: requireSource}
		p, err := Parse(field.FromForm(v), opts)
		if err != nil {
			var e *apierr.Error
			if !errors.As(err, &e) || e.Status != 400 || len(e.Fields) == 0 {
				t.Fatalf("error %v is not a 400 with validation errors", err)
			}
			return
		}
		checkRanges(t, &p, opts)
		c := p.Canonical()
		o2, err := field.ParseJSON(c)
		if err != nil {
			t.Fatalf("Canonical %s is not a JSON object: %v", c, err)
		}
		p2, err := Parse(o2, opts)
		if err != nil {
			t.Fatalf("Canonical %s does not parse: %v (%v)", c, err, errorPathsOrNil(err))
		}
		if c2 := p2.Canonical(); string(c2) != string(c) {
			t.Fatalf("Canonical not stable:\n%s\n%s", c, c2)
		}
	})
}

// checkRanges asserts that every value of p is within its rules.
func checkRanges(t *testing.T, p *Params, opts Options) {
	t.Helper()
	fail := func(what string, v any) { t.Fatalf("%s out of range: %v", what, v) }
	sources := 0
	for _, s := range []string{p.HTML, p.URL, p.TemplateID} {
		if s != "" {
			sources++
		}
	}
	if sources > 1 || (opts.RequireSource && sources == 0) {
		fail("source", p)
	}
	if len(p.HTML) > MaxHTMLBytes || (p.HTML != "" && strings.TrimSpace(p.HTML) == "") {
		fail("html", len(p.HTML))
	}
	if p.URL != "" {
		if n, problem := normalizeURL(p.URL); problem != "" || n != p.URL || utf8.RuneCountInString(p.URL) > MaxURLLength {
			fail("url", p.URL)
		}
	}
	if p.TemplateID != "" && (!strings.HasPrefix(p.TemplateID, "t-") || utf8.RuneCountInString(p.TemplateID) > MaxIDLength) {
		fail("template_id", p.TemplateID)
	}
	if len(p.TemplateValues) > MaxTemplateValuesBytes || (p.TemplateValues != nil && p.TemplateValues[0] != '{') {
		fail("template_values", len(p.TemplateValues))
	}
	if len(p.CSS) > MaxCSSBytes {
		fail("css", len(p.CSS))
	}
	if len(p.GoogleFonts) > MaxGoogleFonts {
		fail("google_fonts", p.GoogleFonts)
	}
	for _, g := range p.GoogleFonts {
		if g == "" || strings.ContainsAny(g, "|+&<>\"'") {
			fail("google_fonts", g)
		}
	}
	if s := p.DeviceScale(); s < MinDeviceScale || s > MaxDeviceScale {
		fail("device_scale", s)
	}
	for _, sz := range []*Size{p.Viewport} {
		if sz != nil && (sz.Width < MinViewport || sz.Width > MaxViewport || sz.Height < MinViewport || sz.Height > MaxViewport) {
			fail("viewport", *sz)
		}
	}
	if p.Jumbo != nil && (p.Jumbo.Width < 1 || p.Jumbo.Width > MaxJumbo || p.Jumbo.Height < 1 || p.Jumbo.Height > MaxJumbo) {
		fail("jumbo", *p.Jumbo)
	}
	if p.MediaType != "" && p.MediaType != MediaScreen && p.MediaType != MediaPrint {
		fail("media_type", p.MediaType)
	}
	if p.ColorScheme != "" && p.ColorScheme != ColorLight && p.ColorScheme != ColorDark {
		fail("color_scheme", p.ColorScheme)
	}
	if p.Timezone != "" && checkTimezone(p.Timezone) != "" {
		fail("timezone", p.Timezone)
	}
	if p.Selector != "" && (strings.TrimSpace(p.Selector) == "" || utf8.RuneCountInString(p.Selector) > MaxSelectorLength) {
		fail("selector", p.Selector)
	}
	if p.Delay < 0 || p.Delay > MaxDelay || p.Delay%time.Millisecond != 0 {
		fail("ms_delay", p.Delay)
	}
	if p.MaxWait != 0 && (p.MaxWait < MinMaxWait || p.MaxWait > MaxMaxWait || (opts.MaxWaitCap > 0 && p.MaxWait > opts.MaxWaitCap)) {
		fail("max_wait_ms", p.MaxWait)
	}
	switch p.Format {
	case FormatPNG, FormatJPG, FormatWebP, FormatPDF:
	default:
		fail("format", p.Format)
	}
	if pdf := p.PDF; pdf != nil {
		if pdf.Scale < MinPDFScale || pdf.Scale > MaxPDFScale || pdf.PageWidth < 0 || pdf.PageWidth > MaxPDFInches || pdf.PageHeight < 0 || pdf.PageHeight > MaxPDFInches {
			fail("pdf_options", *pdf)
		}
		if m := pdf.Margins; m != nil {
			for _, v := range []float64{m.Top, m.Right, m.Bottom, m.Left} {
				if v < 0 || v > MaxPDFInches {
					fail("pdf_options.margins", *m)
				}
			}
		}
	}
	if len(p.Headers) > MaxHeaders {
		fail("headers", len(p.Headers))
	}
	for name, value := range p.Headers {
		if !isToken(name) || forbiddenHeader(name) || checkHeaderValue(value) != "" {
			fail("headers", name)
		}
	}
	if len(p.AdditionalHeaderOrigins) > MaxAdditionalHeaderOrigins {
		fail("additional_header_origins", len(p.AdditionalHeaderOrigins))
	}
	for _, origin := range p.AdditionalHeaderOrigins {
		if n, problem := normalizeOrigin(origin); problem != "" || n != origin {
			fail("additional_header_origins", origin)
		}
	}
	if d := p.DedupeDurationS; d != nil && (*d < 0 || *d > MaxDedupeDurationS) {
		fail("dedupe_duration_s", *d)
	}
	if len(p.Metadata) > MaxMetadataEntries {
		fail("metadata", len(p.Metadata))
	}
	for k, v := range p.Metadata {
		if n := utf8.RuneCountInString(k); n < 1 || n > MaxMetadataKeyLength || utf8.RuneCountInString(v) > MaxMetadataValueLength {
			fail("metadata", k)
		}
	}
	for _, id := range []string{p.ProxyID, p.StorageDestinationID} {
		if id != "" && (strings.TrimSpace(id) == "" || utf8.RuneCountInString(id) > MaxIDLength) {
			fail("id", id)
		}
	}
}
