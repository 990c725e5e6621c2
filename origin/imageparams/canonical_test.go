package imageparams

import (
	"encoding/json"
	"net/url"
	"testing"
	"time"
)

func canonical(t *testing.T, body string, form bool) string {
	t.Helper()
	p, err := Parse(object(t, body, form), Options{RequireSource: true})
	if err != nil {
		t.Fatalf("Parse(%s): %v (%v)", body, err, errorPathsOrNil(err))
	}
	c := p.Canonical()
	// The canonical form is a request that parses to itself.
	again, err := Parse(object(t, string(c), false), Options{RequireSource: true})
	if err != nil {
		t.Fatalf("Parse(Canonical %s): %v (%v)", c, err, errorPathsOrNil(err))
	}
	if c2 := again.Canonical(); string(c2) != string(c) {
		t.Fatalf("Canonical not stable:\n%s\n%s", c, c2)
	}
	return string(c)
}

type request struct {
	body string
	form bool
}

func TestCanonicalEquivalent(t *testing.T) {
	q := url.QueryEscape
	tests := []struct {
		name     string
		requests []request
	}{
		{name: "JSON and form, key order, strings for numbers", requests: []request{
			{body: `{"html":"<p>x</p>","viewport_width":800,"viewport_height":600,"device_scale":1.5,"full_screen":true,"ms_delay":100}`},
			{body: `{"ms_delay":"100","full_screen":"true","device_scale":"1.50","viewport_height":"600","viewport_width":"800","html":"<p>x</p>"}`},
			{body: `html=` + q("<p>x</p>") + `&viewport_height=600&viewport_width=800.0&device_scale=1.5&full_screen=1&ms_delay=100`, form: true},
		}},
		{name: "defaults spelled out or omitted (HTML)", requests: []request{
			{body: `{"html":"x"}`},
			{body: `{"html":"x","device_scale":2,"ms_delay":0,"format":"png","disable_twemoji":false,"full_screen":false,"viewport_mobile":false,"include_headers_on_subrequests":false,"css":""}`},
			{body: `html=x&format=PNG&device_scale=2&disable_twemoji=0&render_when_ready=false`, form: true},
		}},
		{name: "defaults spelled out or omitted (URL)", requests: []request{
			{body: `{"url":"https://example.com/"}`},
			{body: `{"url":"HTTPS://EXAMPLE.com:443","device_scale":1,"disable_twemoji":true}`},
			{body: `url=https://example.com&html=ignored`, form: true},
		}},
		{name: "dedupe_duration_s is not identity", requests: []request{
			{body: `{"html":"y","dedupe_duration_s":0}`},
			{body: `{"html":"y","dedupe_duration_s":2592000}`},
			{body: `{"html":"y"}`},
		}},
		{name: "headers: case, blanks, JSON or repeated", requests: []request{
			{body: `{"url":"https://e.com","headers":{"X-Api-Key":"k","Accept-Language":"fr"}}`},
			{body: `{"url":"https://e.com","headers":{"accept-language":" fr ","x-api-key":"k"}}`},
			{body: `url=https://e.com&headers=x-API-key:k&headers=Accept-Language:%20fr`, form: true},
			{body: `url=https://e.com&headers=` + q(`{"X-API-KEY":"k","ACCEPT-LANGUAGE":"fr"}`), form: true},
		}},
		{name: "origins: normalization, order, duplicates", requests: []request{
			{body: `{"url":"https://e.com","additional_header_origins":["https://a.com","http://b.com:8080"]}`},
			{body: `{"url":"https://e.com","additional_header_origins":["HTTP://B.com:8080/","https://A.com:443","https://a.com/"]}`},
			{body: `url=https://e.com&additional_header_origins=http://b.com:8080&additional_header_origins=https://a.com`, form: true},
		}},
		{name: "pdf lengths in any unit", requests: []request{
			{body: `{"html":"x","pdf_options":{"page_width":"8.5in","page_height":"11in","margins":["0.5in","0","0.5in","0"]}}`},
			{body: `{"html":"x","pdf_options":{"page_width":"816px","page_height":"792pt","margins":["48px","0in","36pt","0mm"],"scale":1,"print_background":false}}`},
			{body: `html=x&pdf_options=` + q(`{"page_height":"11in","page_width":"612pt","margins":["1.27cm","0","12.7mm","0"],"scale":"1"}`), form: true},
		}},
		{name: "template values key order and form encoding", requests: []request{
			{body: `{"template_id":"t-1","template_values":{"a":1,"b":{"d":[1,"<b>"],"c":true}}}`},
			{body: `{"template_values":{"b":{"c":true,"d":[1,"<b>"]},"a":1},"template_id":"t-1"}`},
			{body: `template_id=t-1&template_values=` + q(`{ "b": {"c": true, "d": [1, "\u003cb>"]}, "a": 1 }`), form: true},
		}},
		{name: "google fonts spelling", requests: []request{
			{body: `{"html":"x","google_fonts":"Open Sans:wght@400|Roboto"}`},
			{body: `google_fonts=Open%2BSans:wght@400%7C%20Roboto&html=x`, form: true},
		}},
		{name: "format jpeg", requests: []request{
			{body: `{"html":"x","format":"jpg"}`},
			{body: `{"html":"x","format":"JPEG"}`},
		}},
		{name: "metadata order", requests: []request{
			{body: `{"html":"x","metadata":{"a":"1","b":"2"}}`},
			{body: `html=x&metadata=` + q(`{"b":"2","a":"1"}`), form: true},
		}},
	}
	seen := map[string]string{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			first := canonical(t, tc.requests[0].body, tc.requests[0].form)
			for _, r := range tc.requests[1:] {
				if got := canonical(t, r.body, r.form); got != first {
					t.Errorf("canonical differs:\n%s\n%s", first, got)
				}
			}
			if other, dup := seen[first]; dup {
				t.Errorf("same canonical as %q", other)
			}
			seen[first] = tc.name
		})
	}
}

func TestCanonicalDiffers(t *testing.T) {
	base := map[string]any{
		"html": "<p>x</p>", "css": "p{}", "viewport_width": 800, "viewport_height": 600,
		"headers": map[string]string{"X-A": "1"}, "pdf_options": map[string]any{"scale": 1.5},
	}
	changes := []struct {
		name  string
		field string
		value any // nil deletes the field
	}{
		{"html", "html", "<p>y</p>"},
		{"html to url", "url", "https://example.com/"},
		{"css", "css", "p{color:red}"},
		{"no css", "css", nil},
		{"google_fonts", "google_fonts", "Roboto"},
		{"device_scale", "device_scale", 1},
		{"viewport_width", "viewport_width", 801},
		{"viewport_height", "viewport_height", 601},
		{"no viewport", "viewport_width", nil},
		{"viewport_mobile", "viewport_mobile", true},
		{"viewport_landscape", "viewport_landscape", true},
		{"viewport_touch", "viewport_touch", true},
		{"media_type screen", "media_type", "screen"},
		{"media_type print", "media_type", "print"},
		{"color_scheme", "color_scheme", "dark"},
		{"timezone", "timezone", "Europe/Paris"},
		{"selector", "selector", "#card"},
		{"ms_delay", "ms_delay", 1},
		{"max_wait_ms", "max_wait_ms", 500},
		{"render_when_ready", "render_when_ready", true},
		{"full_screen", "full_screen", true},
		{"block_consent_banners", "block_consent_banners", true},
		{"disable_twemoji", "disable_twemoji", true},
		{"transparent_background", "transparent_background", true},
		{"format", "format", "webp"},
		{"pdf scale", "pdf_options", map[string]any{"scale": 1.25}},
		{"pdf page", "pdf_options", map[string]any{"scale": 1.5, "page_width": "8in"}},
		{"pdf margins", "pdf_options", map[string]any{"scale": 1.5, "margins": []string{"0", "0", "0", "1px"}}},
		{"pdf background", "pdf_options", map[string]any{"scale": 1.5, "print_background": true}},
		{"no pdf", "pdf_options", nil},
		{"header value", "headers", map[string]string{"X-A": "2"}},
		{"header name", "headers", map[string]string{"X-B": "1"}},
		{"no headers", "headers", nil},
		{"additional_header_origins", "additional_header_origins", []string{"https://a.com"}},
		{"include_headers_on_subrequests", "include_headers_on_subrequests", true},
		{"identify_as_service", "identify_as_service", true},
		{"jumbo", "jumbo_max_width", 1000},
		{"metadata", "metadata", map[string]string{"k": "v"}},
		{"proxy_id", "proxy_id", "p-1"},
		{"storage_destination_id", "storage_destination_id", "sd-1"},
		{"template", "template_id", "t-1"},
	}
	encode := func(m map[string]any) string {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	baseCanonical := canonical(t, encode(base), false)
	seen := map[string]string{baseCanonical: "base"}
	for _, tc := range changes {
		t.Run(tc.name, func(t *testing.T) {
			m := map[string]any{}
			for k, v := range base {
				m[k] = v
			}
			switch {
			case tc.value == nil:
				delete(m, tc.field)
			default:
				m[tc.field] = tc.value
			}
			switch tc.field {
			case "url", "template_id":
				delete(m, "html")
			case "viewport_width":
				if tc.value == nil {
					delete(m, "viewport_height")
				}
			case "jumbo_max_width":
				m["jumbo_max_height"] = 1000
			}
			c := canonical(t, encode(m), false)
			if other, dup := seen[c]; dup {
				t.Fatalf("same canonical as %q: %s", other, c)
			}
			seen[c] = tc.name
		})
	}
}

func TestCanonicalFormat(t *testing.T) {
	got := canonical(t, `{"url":"https://Example.com?a=<b>","viewport_width":800,"viewport_height":600,"headers":{"X-Token":"t"},
		"pdf_options":{"page_width":"210mm","margins":["1in","0","1in","0"]},"max_wait_ms":2000,"dedupe_duration_s":60}`, false)
	want := `{"url":"https://example.com/?a=<b>","device_scale":1,"viewport_width":800,"viewport_height":600,"max_wait_ms":2000,` +
		`"disable_twemoji":true,"format":"png","pdf_options":{"page_width":"8.267716535433072in","scale":1,"margins":["1in","0in","1in","0in"],` +
		`"print_background":false},"headers":{"x-token":"t"}}`
	if got != want {
		t.Fatalf("Canonical =\n%s\nwant\n%s", got, want)
	}
}

func TestCanonicalHandBuilt(t *testing.T) {
	// Zero values of a hand-built Params resolve like Parse's defaults.
	p := Params{HTML: "x", PDF: &PDFOptions{}, Delay: 0, MaxWait: 0 * time.Millisecond}
	want := `{"html":"x","device_scale":2,"disable_twemoji":false,"format":"png","pdf_options":{"scale":1,"print_background":false}}`
	if got := string(p.Canonical()); got != want {
		t.Fatalf("Canonical = %s, want %s", got, want)
	}
}
