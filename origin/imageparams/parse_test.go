package imageparams

import (
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
)

// object builds the fields of a request: a JSON body, or a form when form is set.
func object(t testing.TB, body string, form bool) *field.Object {
	t.Helper()
	if form {
		v, err := url.ParseQuery(body)
		if err != nil {
			t.Fatalf("form %q: %v", body, err)
		}
		return field.FromForm(v)
	}
	o, err := field.ParseJSON([]byte(body))
	if err != nil {
		t.Fatalf("JSON %q: %v", body, err)
	}
	return o
}

func errorPaths(t testing.TB, err error) []string {
	t.Helper()
	var e *apierr.Error
	if !errors.As(err, &e) || e.Status != 400 {
		t.Fatalf("err = %v, want a 400 *apierr.Error", err)
	}
	var paths []string
	for _, f := range e.Fields {
		paths = append(paths, f.Path)
	}
	return paths
}

func jsonString(s string) string { return fmt.Sprintf("%q", s) }

func TestParseValid(t *testing.T) {
	src := Options{RequireSource: true}
	tests := []struct {
		name  string
		body  string
		form  bool
		opts  Options
		check func(t *testing.T, p *Params)
	}{
		{name: "html defaults", body: `{"html":"<p>hi</p>"}`, opts: src, check: func(t *testing.T, p *Params) {
			if p.Kind() != KindHTML || p.DeviceScale() != 2 || !p.Twemoji() || p.Format != FormatPNG || p.HTML != "<p>hi</p>" {
				t.Errorf("got kind %v scale %v twemoji %v format %q", p.Kind(), p.DeviceScale(), p.Twemoji(), p.Format)
			}
			if p.Viewport != nil || p.PDF != nil || p.Headers != nil || p.DedupeDurationS != nil || p.DisableTwemoji != nil {
				t.Errorf("unsent fields set: %+v", p)
			}
		}},
		{name: "url wins over html", body: `{"html":"<p>hi</p>","url":"https://example.com/a?b=1"}`, opts: src, check: func(t *testing.T, p *Params) {
			if p.Kind() != KindURL || p.HTML != "" || p.URL != "https://example.com/a?b=1" || p.DeviceScale() != 1 || p.Twemoji() {
				t.Errorf("got kind %v html %q url %q scale %v twemoji %v", p.Kind(), p.HTML, p.URL, p.DeviceScale(), p.Twemoji())
			}
		}},
		{name: "url wins over invalid html", body: `{"html":5,"url":"http://example.com"}`, opts: src, check: func(t *testing.T, p *Params) {
			if p.URL != "http://example.com/" {
				t.Errorf("url = %q", p.URL)
			}
		}},
		{name: "url normalized", body: `{"url":"  HTTPS://Example.COM:443?q=A#Frag "}`, check: func(t *testing.T, p *Params) {
			if p.URL != "https://example.com/?q=A#Frag" {
				t.Errorf("url = %q", p.URL)
			}
		}},
		{name: "url keeps other port and ipv6", body: `{"url":"http://[2001:DB8::1]:8080/P"}`, check: func(t *testing.T, p *Params) {
			if p.URL != "http://[2001:db8::1]:8080/P" {
				t.Errorf("url = %q", p.URL)
			}
		}},
		{name: "url at the length limit", body: `{"url":"HTTPS://example.com:443/` + strings.Repeat("a", MaxURLLength-len("https://example.com/")) + `"}`, check: func(t *testing.T, p *Params) {
			if len(p.URL) != MaxURLLength {
				t.Errorf("url length %d", len(p.URL))
			}
		}},
		{name: "url with trailing dot and unicode host", body: `{"url":"https://Bücher.DE./x"}`, check: func(t *testing.T, p *Params) {
			if p.URL != "https://bücher.de./x" {
				t.Errorf("url = %q", p.URL)
			}
		}},
		{name: "url twemoji only when explicitly false", body: `{"url":"https://example.com","disable_twemoji":false}`, check: func(t *testing.T, p *Params) {
			if !p.Twemoji() || p.DisableTwemoji == nil || *p.DisableTwemoji {
				t.Errorf("twemoji %v", p.Twemoji())
			}
		}},
		{name: "html disable_twemoji true", body: `{"html":"x","disable_twemoji":"true"}`, check: func(t *testing.T, p *Params) {
			if p.Twemoji() {
				t.Error("twemoji on")
			}
		}},
		{name: "template", body: `{"template_id":"t-123","template_values":{"b":[1,2.50,{"z":null,"a":"<&>"}],"a":"x"}}`, opts: src, check: func(t *testing.T, p *Params) {
			if p.Kind() != KindTemplate || p.DeviceScale() != 2 || !p.Twemoji() {
				t.Errorf("kind %v", p.Kind())
			}
			if got, want := string(p.TemplateValues), `{"a":"x","b":[1,2.50,{"a":"<&>","z":null}]}`; got != want {
				t.Errorf("template_values = %s, want %s", got, want)
			}
		}},
		{name: "template values in a form", body: `template_id=t-1&template_values={"n":{"m":1}}`, form: true, check: func(t *testing.T, p *Params) {
			if string(p.TemplateValues) != `{"n":{"m":1}}` {
				t.Errorf("template_values = %s", p.TemplateValues)
			}
		}},
		{name: "empty template values", body: `{"template_id":"t-1","template_values":{}}`, check: func(t *testing.T, p *Params) {
			if p.TemplateValues != nil {
				t.Errorf("template_values = %s", p.TemplateValues)
			}
		}},
		{name: "no source allowed", body: `{"viewport_width":10,"viewport_height":20}`, check: func(t *testing.T, p *Params) {
			if p.Kind() != KindNone || *p.Viewport != (Size{10, 20}) {
				t.Errorf("kind %v viewport %v", p.Kind(), p.Viewport)
			}
		}},
		{name: "numbers and booleans as strings in JSON", body: `{"html":"x","viewport_width":"800","viewport_height":" 600 ","device_scale":"1.5","full_screen":"1","ms_delay":"250","max_wait_ms":"5000","viewport_mobile":"on"}`, check: func(t *testing.T, p *Params) {
			if *p.Viewport != (Size{800, 600}) || p.DeviceScale() != 1.5 || !p.FullScreen || p.Delay != 250*time.Millisecond || p.MaxWait != 5*time.Second || !p.ViewportMobile {
				t.Errorf("got %+v", p)
			}
		}},
		{name: "every scalar", body: `{"html":"x","css":"p{}","viewport_width":1,"viewport_height":6000,"viewport_mobile":true,"viewport_landscape":true,"viewport_touch":true,
			"media_type":"Print","color_scheme":"DARK","timezone":"America/New_York","selector":"#card","ms_delay":10000,"max_wait_ms":500,"render_when_ready":true,
			"full_screen":true,"block_consent_banners":true,"transparent_background":true,"include_headers_on_subrequests":true,"identify_as_service":true,
			"dedupe_duration_s":0,"jumbo_max_width":80000,"jumbo_max_height":1,"proxy_id":"p-1","storage_destination_id":"sd-1","format":"WebP"}`,
			opts: Options{MaxWaitCap: 5 * time.Second}, check: func(t *testing.T, p *Params) {
				want := Params{HTML: "x", CSS: "p{}", Viewport: &Size{1, 6000}, ViewportMobile: true, ViewportLandscape: true, ViewportTouch: true,
					MediaType: MediaPrint, ColorScheme: ColorDark, Timezone: "America/New_York", Selector: "#card", Delay: 10 * time.Second,
					MaxWait: 500 * time.Millisecond, RenderWhenReady: true, FullScreen: true, BlockConsentBanners: true, TransparentBackground: true,
					IncludeHeadersOnSubrequests: true, IdentifyAsService: true, Jumbo: &Size{80000, 1}, ProxyID: "p-1", StorageDestinationID: "sd-1", Format: FormatWebP}
				if p.DedupeDurationS == nil || *p.DedupeDurationS != 0 {
					t.Errorf("dedupe = %v", p.DedupeDurationS)
				}
				p.DedupeDurationS = nil
				if !reflect.DeepEqual(*p, want) {
					t.Errorf("got  %+v\nwant %+v", *p, want)
				}
			}},
		{name: "jpeg is jpg", body: `{"html":"x","format":"JPEG"}`, check: func(t *testing.T, p *Params) {
			if p.Format != FormatJPG {
				t.Errorf("format %q", p.Format)
			}
		}},
		{name: "UTC timezone", body: `{"html":"x","timezone":"UTC"}`, check: func(t *testing.T, p *Params) {
			if p.Timezone != "UTC" {
				t.Errorf("timezone %q", p.Timezone)
			}
		}},
		{name: "google fonts", body: `{"html":"x","google_fonts":"Open+Sans:wght@400;700| Roboto |M  PLUS 1p|Roboto Flex:opsz,slnt@8..144,-10..0"}`, check: func(t *testing.T, p *Params) {
			want := []string{"Open Sans:wght@400;700", "Roboto", "M PLUS 1p", "Roboto Flex:opsz,slnt@8..144,-10..0"}
			if !slices.Equal(p.GoogleFonts, want) {
				t.Errorf("google_fonts = %q", p.GoogleFonts)
			}
		}},
		{name: "pdf units", body: `{"html":"x","pdf_options":{"page_width":"816px","page_height":"297mm","scale":"0.5","margins":["72pt","0","2.54cm","0.5IN"],"print_background":true,"unknown":1}}`, check: func(t *testing.T, p *Params) {
			want := PDFOptions{PageWidth: 8.5, PageHeight: 297 / 25.4, Scale: 0.5, PrintBackground: true}
			if p.PDF == nil || p.PDF.Margins == nil {
				t.Fatalf("pdf = %+v", p.PDF)
			}
			if m := *p.PDF.Margins; m != (Margins{1, 0, 1, 0.5}) {
				t.Errorf("margins = %+v", m)
			}
			got := *p.PDF
			got.Margins = nil
			if got != want {
				t.Errorf("pdf = %+v, want %+v", got, want)
			}
		}},
		{name: "pdf defaults", body: `format=pdf&html=x&pdf_options={}`, form: true, check: func(t *testing.T, p *Params) {
			if p.PDF == nil || *p.PDF != (PDFOptions{Scale: 1}) || p.Format != FormatPDF {
				t.Errorf("pdf = %+v", p.PDF)
			}
		}},
		{name: "headers JSON", body: `{"url":"https://example.com","headers":{"x-api-key":" secret ","Authorization":"Bearer a","Cookie":"a=b; c=d"}}`, check: func(t *testing.T, p *Params) {
			want := map[string]string{"X-Api-Key": "secret", "Authorization": "Bearer a", "Cookie": "a=b; c=d"}
			if fmt.Sprint(p.Headers) != fmt.Sprint(want) {
				t.Errorf("headers = %v", p.Headers)
			}
		}},
		{name: "headers repeated in a form", body: `url=https://example.com&headers=X-A:1&headers=` + url.QueryEscape("x-b: two:parts ") + `&headers=`, form: true, check: func(t *testing.T, p *Params) {
			if fmt.Sprint(p.Headers) != fmt.Sprint(map[string]string{"X-A": "1", "X-B": "two:parts"}) {
				t.Errorf("headers = %v", p.Headers)
			}
		}},
		{name: "headers JSON in a form", body: `url=https://example.com&headers=` + url.QueryEscape(`{"X-A":"1"}`), form: true, check: func(t *testing.T, p *Params) {
			if p.Headers["X-A"] != "1" || len(p.Headers) != 1 {
				t.Errorf("headers = %v", p.Headers)
			}
		}},
		{name: "origins normalized, deduplicated and sorted", body: `{"url":"https://example.com","additional_header_origins":["https://CDN.example.com:443/","http://a.example.com:8080"," https://cdn.example.com "]}`, check: func(t *testing.T, p *Params) {
			want := []string{"http://a.example.com:8080", "https://cdn.example.com"}
			if !slices.Equal(p.AdditionalHeaderOrigins, want) {
				t.Errorf("origins = %q", p.AdditionalHeaderOrigins)
			}
		}},
		{name: "origins repeated in a form", body: `url=https://example.com&additional_header_origins=https://b.com&additional_header_origins=http://a.com:80&additional_header_origins=`, form: true, check: func(t *testing.T, p *Params) {
			if !slices.Equal(p.AdditionalHeaderOrigins, []string{"http://a.com", "https://b.com"}) {
				t.Errorf("origins = %q", p.AdditionalHeaderOrigins)
			}
		}},
		{name: "origins JSON array in a form", body: `url=https://example.com&additional_header_origins=` + url.QueryEscape(`["https://b.com"]`), form: true, check: func(t *testing.T, p *Params) {
			if !slices.Equal(p.AdditionalHeaderOrigins, []string{"https://b.com"}) {
				t.Errorf("origins = %q", p.AdditionalHeaderOrigins)
			}
		}},
		{name: "metadata", body: `{"html":"x","metadata":{"customer":"42","empty":""}}`, check: func(t *testing.T, p *Params) {
			if len(p.Metadata) != 2 || p.Metadata["customer"] != "42" {
				t.Errorf("metadata = %v", p.Metadata)
			}
		}},
		{name: "blank form values are not sent", body: `html=x&viewport_width=&viewport_height=&selector=&format=&device_scale=&disable_twemoji=&proxy_id=&metadata=&pdf_options=`, form: true, opts: src, check: func(t *testing.T, p *Params) {
			if p.Viewport != nil || p.Selector != "" || p.Format != FormatPNG || p.RequestedDeviceScale != 0 || p.DisableTwemoji != nil || p.PDF != nil || p.Metadata != nil {
				t.Errorf("got %+v", p)
			}
		}},
		{name: "form last value wins", body: `html=a&html=b&viewport_width=1&viewport_width=2&viewport_height=3`, form: true, check: func(t *testing.T, p *Params) {
			if p.HTML != "b" || *p.Viewport != (Size{2, 3}) {
				t.Errorf("got %+v", p)
			}
		}},
		{name: "nulls are not sent", body: `{"html":"x","url":null,"viewport_width":null,"headers":null,"pdf_options":null,"disable_twemoji":null,"metadata":null}`, opts: src, check: func(t *testing.T, p *Params) {
			if p.Kind() != KindHTML || p.Viewport != nil || p.Headers != nil || p.PDF != nil || p.DisableTwemoji != nil {
				t.Errorf("got %+v", p)
			}
		}},
		{name: "unknown fields ignored", body: `{"html":"x","whatever":{"a":1},"viewport":"big"}`, check: func(t *testing.T, p *Params) {}},
		{name: "max_wait_ms at the plan cap", body: `{"html":"x","max_wait_ms":5000}`, opts: Options{MaxWaitCap: 5 * time.Second}, check: func(t *testing.T, p *Params) {
			if p.MaxWait != 5*time.Second {
				t.Errorf("max wait %v", p.MaxWait)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse(object(t, tc.body, tc.form), tc.opts)
			if err != nil {
				t.Fatalf("Parse: %v (%v)", err, errorPathsOrNil(err))
			}
			tc.check(t, &p)
		})
	}
}

func errorPathsOrNil(err error) []apierr.FieldError {
	var e *apierr.Error
	if errors.As(err, &e) {
		return e.Fields
	}
	return nil
}

func TestParseInvalid(t *testing.T) {
	src := Options{RequireSource: true}
	many := func(n int, f func(i int) string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = f(i)
		}
		return strings.Join(parts, ",")
	}
	tests := []struct {
		name  string
		body  string
		form  bool
		opts  Options
		paths []string
	}{
		// Source.
		{name: "source required", body: `{"css":"p{}"}`, opts: src, paths: []string{"html"}},
		{name: "source required in a form with blanks", body: `html=&url=&template_id=`, form: true, opts: src, paths: []string{"html"}},
		{name: "html blank", body: `{"html":"  "}`, paths: []string{"html"}},
		{name: "html not a string", body: `{"html":{"a":1}}`, paths: []string{"html"}},
		{name: "html too large", body: `{"html":` + jsonString(strings.Repeat("x", MaxHTMLBytes+1)) + `}`, paths: []string{"html"}},
		{name: "html invalid UTF-8 in a form", body: "html=%ff", form: true, paths: []string{"html"}},
		{name: "css too large", body: `{"html":"x","css":` + jsonString(strings.Repeat("x", MaxCSSBytes+1)) + `}`, paths: []string{"css"}},
		{name: "url relative", body: `{"url":"/path"}`, paths: []string{"url"}},
		{name: "url ftp", body: `{"url":"ftp://example.com/"}`, paths: []string{"url"}},
		{name: "url without slashes", body: `{"url":"http:example.com"}`, paths: []string{"url"}},
		{name: "url without host", body: `{"url":"https:///path"}`, paths: []string{"url"}},
		{name: "url with userinfo", body: `{"url":"https://user:pw@example.com/"}`, paths: []string{"url"}},
		{name: "url with empty userinfo", body: `{"url":"https://@example.com/"}`, paths: []string{"url"}},
		{name: "url with port 0", body: `{"url":"https://example.com:0/"}`, paths: []string{"url"}},
		{name: "url with port too big", body: `{"url":"https://example.com:65536/"}`, paths: []string{"url"}},
		{name: "url with space", body: `{"url":"https://example.com/a b"}`, paths: []string{"url"}},
		{name: "url with escaped host", body: `{"url":"https://exa%6dple.com/"}`, paths: []string{"url"}},
		{name: "url with empty label", body: `{"url":"https://a..com/"}`, paths: []string{"url"}},
		{name: "url with dash label", body: `{"url":"https://-a.com/"}`, paths: []string{"url"}},
		{name: "url with long label", body: `{"url":"https://` + strings.Repeat("a", 64) + `.com/"}`, paths: []string{"url"}},
		{name: "url with dot host", body: `{"url":"https://./"}`, paths: []string{"url"}},
		{name: "url with zone", body: `{"url":"http://[fe80::1%25en0]/"}`, paths: []string{"url"}},
		{name: "url too long", body: `{"url":"https://example.com/` + strings.Repeat("a", MaxURLLength) + `"}`, paths: []string{"url"}},
		{name: "url too long once normalized", body: `{"url":"https://example.com?` + strings.Repeat("a", MaxURLLength-len("https://example.com?")) + `"}`, paths: []string{"url"}},
		{name: "url not a string", body: `{"url":true}`, paths: []string{"url"}},
		{name: "template id prefix", body: `{"template_id":"x-1"}`, paths: []string{"template_id"}},
		{name: "template id bare prefix", body: `{"template_id":"t-"}`, paths: []string{"template_id"}},
		{name: "template id too long", body: `{"template_id":"t-` + strings.Repeat("a", MaxIDLength) + `"}`, paths: []string{"template_id"}},
		{name: "template with html", body: `{"template_id":"t-1","html":"x"}`, paths: []string{"template_id"}},
		{name: "template values array", body: `{"template_id":"t-1","template_values":[1]}`, paths: []string{"template_values"}},
		{name: "template values JSON string in JSON", body: `{"template_id":"t-1","template_values":"{\"a\":1}"}`, paths: []string{"template_values"}},
		{name: "template values not JSON in a form", body: `template_id=t-1&template_values={a:1}`, form: true, paths: []string{"template_values"}},
		{name: "template values trailing data in a form", body: `template_id=t-1&template_values={}{}`, form: true, paths: []string{"template_values"}},
		{name: "template values null in a form", body: `template_id=t-1&template_values=null`, form: true, paths: []string{"template_values"}},
		{name: "template values too large", body: `{"template_id":"t-1","template_values":{"a":` + jsonString(strings.Repeat("x", MaxTemplateValuesBytes)) + `}}`, paths: []string{"template_values"}},
		// Fonts.
		{name: "google fonts empty family", body: `{"html":"x","google_fonts":"Roboto||Lato"}`, paths: []string{"google_fonts"}},
		{name: "google fonts trailing pipe", body: `{"html":"x","google_fonts":"Roboto|"}`, paths: []string{"google_fonts"}},
		{name: "google fonts markup", body: `{"html":"x","google_fonts":"Roboto<script>"}`, paths: []string{"google_fonts"}},
		{name: "google fonts query injection", body: `{"html":"x","google_fonts":"Roboto:wght@400&display=block"}`, paths: []string{"google_fonts"}},
		{name: "google fonts empty style", body: `{"html":"x","google_fonts":"Roboto:"}`, paths: []string{"google_fonts"}},
		{name: "google fonts too many", body: `{"html":"x","google_fonts":"` + strings.Repeat("A|", MaxGoogleFonts) + `B"}`, paths: []string{"google_fonts"}},
		{name: "google fonts spec too long", body: `{"html":"x","google_fonts":"A:` + strings.Repeat("a", MaxGoogleFontSpecLength) + `"}`, paths: []string{"google_fonts"}},
		// Viewport and scale.
		{name: "device scale too small", body: `{"html":"x","device_scale":0.05}`, paths: []string{"device_scale"}},
		{name: "device scale too large", body: `{"html":"x","device_scale":"3.01"}`, paths: []string{"device_scale"}},
		{name: "device scale not a number", body: `{"html":"x","device_scale":"big"}`, paths: []string{"device_scale"}},
		{name: "viewport width alone", body: `{"html":"x","viewport_width":800}`, paths: []string{"viewport_height"}},
		{name: "viewport height alone", body: `viewport_height=800&html=x`, form: true, paths: []string{"viewport_width"}},
		{name: "viewport width invalid and height missing", body: `{"html":"x","viewport_width":"wide"}`, paths: []string{"viewport_width", "viewport_height"}},
		{name: "viewport zero", body: `{"html":"x","viewport_width":0,"viewport_height":10}`, paths: []string{"viewport_width"}},
		{name: "viewport too large", body: `{"html":"x","viewport_width":10,"viewport_height":6001}`, paths: []string{"viewport_height"}},
		{name: "viewport fractional", body: `{"html":"x","viewport_width":10.5,"viewport_height":10}`, paths: []string{"viewport_width"}},
		{name: "viewport mobile not a boolean", body: `{"html":"x","viewport_mobile":"maybe"}`, paths: []string{"viewport_mobile"}},
		{name: "viewport landscape not a boolean", body: `viewport_landscape=2&html=x`, form: true, paths: []string{"viewport_landscape"}},
		{name: "viewport touch not a boolean", body: `{"html":"x","viewport_touch":[]}`, paths: []string{"viewport_touch"}},
		{name: "media type", body: `{"html":"x","media_type":"tv"}`, paths: []string{"media_type"}},
		{name: "color scheme", body: `{"html":"x","color_scheme":"blue"}`, paths: []string{"color_scheme"}},
		// Timezone.
		{name: "timezone Local", body: `{"html":"x","timezone":"Local"}`, paths: []string{"timezone"}},
		{name: "timezone empty", body: `{"html":"x","timezone":""}`, paths: []string{"timezone"}},
		{name: "timezone dot dot", body: `{"html":"x","timezone":"../../etc/passwd"}`, paths: []string{"timezone"}},
		{name: "timezone absolute path", body: `{"html":"x","timezone":"/etc/localtime"}`, paths: []string{"timezone"}},
		{name: "timezone backslash", body: `{"html":"x","timezone":"Europe\\Paris"}`, paths: []string{"timezone"}},
		{name: "timezone posix tree", body: `{"html":"x","timezone":"posix/Europe/Paris"}`, paths: []string{"timezone"}},
		{name: "timezone unknown", body: `{"html":"x","timezone":"Mars/Olympus_Mons"}`, paths: []string{"timezone"}},
		// Timing and selectors.
		{name: "selector empty", body: `{"html":"x","selector":""}`, paths: []string{"selector"}},
		{name: "selector blank", body: `{"html":"x","selector":"  "}`, paths: []string{"selector"}},
		{name: "selector too long", body: `{"html":"x","selector":"` + strings.Repeat("é", MaxSelectorLength+1) + `"}`, paths: []string{"selector"}},
		{name: "ms delay negative", body: `{"html":"x","ms_delay":-1}`, paths: []string{"ms_delay"}},
		{name: "ms delay too long", body: `{"html":"x","ms_delay":10001}`, paths: []string{"ms_delay"}},
		{name: "max wait too short", body: `{"html":"x","max_wait_ms":499}`, paths: []string{"max_wait_ms"}},
		{name: "max wait too long", body: `{"html":"x","max_wait_ms":10001}`, paths: []string{"max_wait_ms"}},
		{name: "max wait above the plan cap", body: `{"html":"x","max_wait_ms":5001}`, opts: Options{MaxWaitCap: 5 * time.Second}, paths: []string{"max_wait_ms"}},
		{name: "render when ready", body: `{"html":"x","render_when_ready":"yes"}`, paths: []string{"render_when_ready"}},
		{name: "full screen", body: `{"html":"x","full_screen":2}`, paths: []string{"full_screen"}},
		{name: "block consent banners", body: `{"html":"x","block_consent_banners":{}}`, paths: []string{"block_consent_banners"}},
		{name: "disable twemoji", body: `{"html":"x","disable_twemoji":"nope"}`, paths: []string{"disable_twemoji"}},
		{name: "transparent background", body: `{"html":"x","transparent_background":"t"}`, paths: []string{"transparent_background"}},
		{name: "format", body: `{"html":"x","format":"gif"}`, paths: []string{"format"}},
		{name: "format not a string", body: `{"html":"x","format":1}`, paths: []string{"format"}},
		// PDF.
		{name: "pdf options string in JSON", body: `{"html":"x","pdf_options":"{}"}`, paths: []string{"pdf_options"}},
		{name: "pdf options array", body: `{"html":"x","pdf_options":[]}`, paths: []string{"pdf_options"}},
		{name: "pdf options not JSON in a form", body: `html=x&pdf_options=scale:1`, form: true, paths: []string{"pdf_options"}},
		{name: "pdf page width without unit", body: `{"html":"x","pdf_options":{"page_width":"8.5"}}`, paths: []string{"pdf_options.page_width"}},
		{name: "pdf page width number", body: `{"html":"x","pdf_options":{"page_width":8.5}}`, paths: []string{"pdf_options.page_width"}},
		{name: "pdf page width unknown unit", body: `{"html":"x","pdf_options":{"page_width":"8.5em"}}`, paths: []string{"pdf_options.page_width"}},
		{name: "pdf page width negative", body: `{"html":"x","pdf_options":{"page_width":"-1in"}}`, paths: []string{"pdf_options.page_width"}},
		{name: "pdf page width zero", body: `{"html":"x","pdf_options":{"page_width":"0in"}}`, paths: []string{"pdf_options.page_width"}},
		{name: "pdf page height too large", body: `{"html":"x","pdf_options":{"page_height":"201in"}}`, paths: []string{"pdf_options.page_height"}},
		{name: "pdf page height hex", body: `{"html":"x","pdf_options":{"page_height":"0x10in"}}`, paths: []string{"pdf_options.page_height"}},
		{name: "pdf page height inf", body: `{"html":"x","pdf_options":{"page_height":"infin"}}`, paths: []string{"pdf_options.page_height"}},
		{name: "pdf page height with a space", body: `{"html":"x","pdf_options":{"page_height":"8 in"}}`, paths: []string{"pdf_options.page_height"}},
		{name: "pdf scale too large", body: `{"html":"x","pdf_options":{"scale":2.5}}`, paths: []string{"pdf_options.scale"}},
		{name: "pdf scale too small", body: `html=x&pdf_options={"scale":"0.01"}`, form: true, paths: []string{"pdf_options.scale"}},
		{name: "pdf margins count", body: `{"html":"x","pdf_options":{"margins":["1in","1in","1in"]}}`, paths: []string{"pdf_options.margins"}},
		{name: "pdf margins not an array", body: `{"html":"x","pdf_options":{"margins":"1in"}}`, paths: []string{"pdf_options.margins"}},
		{name: "pdf margin invalid", body: `{"html":"x","pdf_options":{"margins":["1in","0","1furlong","1in"]}}`, paths: []string{"pdf_options.margins[2]"}},
		{name: "pdf margin negative", body: `{"html":"x","pdf_options":{"margins":["-1in","0","0","0"]}}`, paths: []string{"pdf_options.margins[0]"}},
		{name: "pdf margin number", body: `{"html":"x","pdf_options":{"margins":["1in",1,"1in","1in"]}}`, paths: []string{"pdf_options.margins[1]"}},
		{name: "pdf margins fill the page", body: `{"html":"x","pdf_options":{"page_height":"2in","margins":["1in","0","1in","0"]}}`, paths: []string{"pdf_options.margins"}},
		{name: "pdf print background", body: `{"html":"x","pdf_options":{"print_background":"sometimes"}}`, paths: []string{"pdf_options.print_background"}},
		// Headers.
		{name: "headers array", body: `{"url":"https://e.com","headers":["X-A: 1"]}`, paths: []string{"headers"}},
		{name: "headers string in JSON", body: `{"url":"https://e.com","headers":"X-A: 1"}`, paths: []string{"headers"}},
		{name: "header value not a string", body: `{"url":"https://e.com","headers":{"X-Count":5}}`, paths: []string{"headers.X-Count"}},
		{name: "header value null", body: `{"url":"https://e.com","headers":{"X-Count":null}}`, paths: []string{"headers.X-Count"}},
		{name: "header name not a token", body: `{"url":"https://e.com","headers":{"Bad Name":"x"}}`, paths: []string{"headers.Bad Name"}},
		{name: "header name empty", body: `{"url":"https://e.com","headers":{"":"x"}}`, paths: []string{"headers."}},
		{name: "header names differing by case", body: `{"url":"https://e.com","headers":{"X-A":"1","x-a":"2"}}`, paths: []string{"headers.x-a"}},
		{name: "header name sent twice", body: `{"url":"https://e.com","headers":{"X-A":"1","X-A":"2"}}`, paths: []string{"headers.X-A"}},
		{name: "header Host", body: `{"url":"https://e.com","headers":{"host":"evil.com"}}`, paths: []string{"headers.host"}},
		{name: "header framing", body: `{"url":"https://e.com","headers":{"Content-Length":"1","Transfer-Encoding":"chunked","TE":"x","Trailer":"x"}}`,
			paths: []string{"headers.Content-Length", "headers.Transfer-Encoding", "headers.TE", "headers.Trailer"}},
		{name: "header hop by hop", body: `{"url":"https://e.com","headers":{"Connection":"close","Keep-Alive":"1","Upgrade":"h2c","Proxy-Authorization":"x","proxy-connection":"x"}}`,
			paths: []string{"headers.Connection", "headers.Keep-Alive", "headers.Upgrade", "headers.Proxy-Authorization", "headers.proxy-connection"}},
		{name: "header value with CRLF", body: `{"url":"https://e.com","headers":{"X-A":"a\r\nHost: evil"}}`, paths: []string{"headers.X-A"}},
		{name: "header value with NUL", body: `{"url":"https://e.com","headers":{"X-A":"a\u0000b"}}`, paths: []string{"headers.X-A"}},
		{name: "header value too long", body: `{"url":"https://e.com","headers":{"X-A":"` + strings.Repeat("a", MaxHeaderValueBytes+1) + `"}}`, paths: []string{"headers.X-A"}},
		{name: "too many headers", body: `{"url":"https://e.com","headers":{` + many(MaxHeaders+1, func(i int) string { return fmt.Sprintf(`"X-%d":"v"`, i) }) + `}}`, paths: []string{"headers"}},
		{name: "form header without colon", body: `url=https://e.com&headers=NoColon`, form: true, paths: []string{"headers"}},
		{name: "form repeated header without colon", body: `url=https://e.com&headers=X-A:1&headers=NoColon`, form: true, paths: []string{"headers[1]"}},
		{name: "form headers differing by case", body: `url=https://e.com&headers=X-A:1&headers=x-a:2`, form: true, paths: []string{"headers.x-a"}},
		{name: "form header CR", body: `url=https://e.com&headers=X-A:1%0D`, form: true, paths: []string{"headers.X-A"}},
		{name: "form header invalid JSON", body: `url=https://e.com&headers={"X-A":`, form: true, paths: []string{"headers"}},
		{name: "form header invalid name", body: `url=https://e.com&headers=X%20A:1`, form: true, paths: []string{"headers.X A"}},
		// Origins.
		{name: "origin with path", body: `{"url":"https://e.com","additional_header_origins":["https://a.com/path"]}`, paths: []string{"additional_header_origins[0]"}},
		{name: "origin with query", body: `{"url":"https://e.com","additional_header_origins":["https://a.com","https://a.com/?"]}`, paths: []string{"additional_header_origins[1]"}},
		{name: "origin with fragment", body: `{"url":"https://e.com","additional_header_origins":["https://a.com#"]}`, paths: []string{"additional_header_origins[0]"}},
		{name: "origin with userinfo", body: `{"url":"https://e.com","additional_header_origins":["https://u@a.com"]}`, paths: []string{"additional_header_origins[0]"}},
		{name: "origin ftp", body: `{"url":"https://e.com","additional_header_origins":["ftp://a.com"]}`, paths: []string{"additional_header_origins[0]"}},
		{name: "origin host only", body: `{"url":"https://e.com","additional_header_origins":["a.com"]}`, paths: []string{"additional_header_origins[0]"}},
		{name: "origin unicode host", body: `{"url":"https://e.com","additional_header_origins":["https://bücher.de"]}`, paths: []string{"additional_header_origins[0]"}},
		{name: "origin empty", body: `{"url":"https://e.com","additional_header_origins":[""]}`, paths: []string{"additional_header_origins[0]"}},
		{name: "origin not a string", body: `{"url":"https://e.com","additional_header_origins":["https://a.com",5]}`, paths: []string{"additional_header_origins[1]"}},
		{name: "origins not an array", body: `{"url":"https://e.com","additional_header_origins":"https://a.com"}`, paths: []string{"additional_header_origins"}},
		{name: "too many origins", body: `{"url":"https://e.com","additional_header_origins":[` + many(MaxAdditionalHeaderOrigins+1, func(i int) string { return fmt.Sprintf(`"https://a%d.com"`, i) }) + `]}`, paths: []string{"additional_header_origins"}},
		{name: "form origin invalid", body: `url=https://e.com&additional_header_origins=https://a.com&additional_header_origins=https://b.com/x`, form: true, paths: []string{"additional_header_origins[1]"}},
		{name: "include headers on subrequests", body: `{"url":"https://e.com","include_headers_on_subrequests":"always"}`, paths: []string{"include_headers_on_subrequests"}},
		{name: "identify as service", body: `{"url":"https://e.com","identify_as_service":"x"}`, paths: []string{"identify_as_service"}},
		// Dedupe and jumbo.
		{name: "dedupe negative", body: `{"html":"x","dedupe_duration_s":-1}`, paths: []string{"dedupe_duration_s"}},
		{name: "dedupe too long", body: `{"html":"x","dedupe_duration_s":31536001}`, paths: []string{"dedupe_duration_s"}},
		{name: "dedupe fractional", body: `dedupe_duration_s=1.5&html=x`, form: true, paths: []string{"dedupe_duration_s"}},
		{name: "jumbo width alone", body: `{"html":"x","jumbo_max_width":100}`, paths: []string{"jumbo_max_height"}},
		{name: "jumbo height alone", body: `{"html":"x","jumbo_max_height":100}`, paths: []string{"jumbo_max_width"}},
		{name: "jumbo too large", body: `{"html":"x","jumbo_max_width":80001,"jumbo_max_height":100}`, paths: []string{"jumbo_max_width"}},
		{name: "jumbo zero", body: `{"html":"x","jumbo_max_width":10,"jumbo_max_height":0}`, paths: []string{"jumbo_max_height"}},
		// Metadata and ids.
		{name: "metadata array", body: `{"html":"x","metadata":["a"]}`, paths: []string{"metadata"}},
		{name: "metadata number value", body: `{"html":"x","metadata":{"n":1}}`, paths: []string{"metadata.n"}},
		{name: "metadata object value", body: `{"html":"x","metadata":{"o":{}}}`, paths: []string{"metadata.o"}},
		{name: "metadata empty key", body: `{"html":"x","metadata":{"":"v"}}`, paths: []string{"metadata."}},
		{name: "metadata key too long", body: `{"html":"x","metadata":{"` + strings.Repeat("k", MaxMetadataKeyLength+1) + `":"v"}}`, paths: []string{"metadata." + strings.Repeat("k", MaxMetadataKeyLength+1)}},
		{name: "metadata value too long", body: `{"html":"x","metadata":{"k":"` + strings.Repeat("v", MaxMetadataValueLength+1) + `"}}`, paths: []string{"metadata.k"}},
		{name: "metadata duplicate key", body: `{"html":"x","metadata":{"k":"1","k":"2"}}`, paths: []string{"metadata.k"}},
		{name: "metadata too many", body: `{"html":"x","metadata":{` + many(MaxMetadataEntries+1, func(i int) string { return fmt.Sprintf(`"k%d":"v"`, i) }) + `}}`, paths: []string{"metadata"}},
		{name: "metadata not JSON in a form", body: `html=x&metadata=a=b`, form: true, paths: []string{"metadata"}},
		{name: "proxy id empty", body: `{"html":"x","proxy_id":""}`, paths: []string{"proxy_id"}},
		{name: "proxy id number", body: `{"html":"x","proxy_id":12}`, paths: []string{"proxy_id"}},
		{name: "proxy id too long", body: `{"html":"x","proxy_id":"` + strings.Repeat("p", MaxIDLength+1) + `"}`, paths: []string{"proxy_id"}},
		{name: "storage destination id blank", body: `{"html":"x","storage_destination_id":" "}`, paths: []string{"storage_destination_id"}},
		// Several at once, in spec order.
		{name: "every error reported", body: `{"url":"nope","viewport_width":0,"format":"gif","headers":{"Host":"x"},"metadata":{"k":1},"pdf_options":{"margins":["1in","1in","x","1in"]}}`,
			paths: []string{"url", "viewport_width", "viewport_height", "format", "pdf_options.margins[2]", "headers.Host", "metadata.k"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(object(t, tc.body, tc.form), tc.opts)
			if got := errorPaths(t, err); !slices.Equal(got, tc.paths) {
				t.Fatalf("paths = %q, want %q (%v)", got, tc.paths, err)
			}
		})
	}
}

func TestParsePrefix(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		form  bool
		paths []string
	}{
		{name: "scalar", body: `{"html":"x","viewport_width":0,"viewport_height":1}`, paths: []string{"variations[3].viewport_width"}},
		{name: "missing source", body: `{}`, paths: []string{"variations[3].html"}},
		{name: "pair", body: `{"html":"x","jumbo_max_width":1}`, paths: []string{"variations[3].jumbo_max_height"}},
		{name: "header", body: `{"url":"https://e.com","headers":{"Host":"x"}}`, paths: []string{"variations[3].headers.Host"}},
		{name: "repeated form header", body: `url=https://e.com&headers=a:1&headers=b`, form: true, paths: []string{"variations[3].headers[1]"}},
		{name: "origin", body: `{"url":"https://e.com","additional_header_origins":["https://a.com/x"]}`, paths: []string{"variations[3].additional_header_origins[0]"}},
		{name: "origin not a string", body: `{"url":"https://e.com","additional_header_origins":[1]}`, paths: []string{"variations[3].additional_header_origins[0]"}},
		{name: "pdf margin", body: `{"html":"x","pdf_options":{"margins":["0","0","x","0"]}}`, paths: []string{"variations[3].pdf_options.margins[2]"}},
		{name: "pdf scale", body: `{"html":"x","pdf_options":{"scale":9}}`, paths: []string{"variations[3].pdf_options.scale"}},
		{name: "metadata", body: `{"html":"x","metadata":{"k":[]}}`, paths: []string{"variations[3].metadata.k"}},
		{name: "template values", body: `{"template_id":"t-1","template_values":1}`, paths: []string{"variations[3].template_values"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := object(t, tc.body, tc.form)
			o.Prefix = "variations[3]."
			_, err := Parse(o, Options{RequireSource: true})
			if got := errorPaths(t, err); !slices.Equal(got, tc.paths) {
				t.Fatalf("paths = %q, want %q", got, tc.paths)
			}
		})
	}
}

func TestParseLeavesObjectAlone(t *testing.T) {
	o := object(t, `{"html":"x","viewport_width":"10","viewport_height":"10"}`, false)
	if _, err := Parse(o, Options{}); err != nil {
		t.Fatal(err)
	}
	if o.Lenient {
		t.Fatal("Parse set Lenient on the caller's object")
	}
	if _, err := Parse(nil, Options{}); err != nil {
		t.Fatalf("nil object: %v", err)
	}
	if _, err := Parse(nil, Options{RequireSource: true}); err == nil {
		t.Fatal("nil object with RequireSource: no error")
	}
}

func TestLengthUnits(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want float64
	}{
		{"inches", "8.5in", 8.5},
		{"pixels", "96px", 1},
		{"points", "72pt", 1},
		{"centimetres", "2.54cm", 1},
		{"millimetres", "25.4mm", 1},
		{"upper case unit", "10MM", 10 / 25.4},
		{"exponent", "1e1in", 10},
		{"leading dot", ".5in", 0.5},
		{"largest", "14400pt", 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, problem := parseLength(tc.in, false)
			if problem != "" || got != tc.want {
				t.Fatalf("parseLength(%q) = %v, %q; want %v", tc.in, got, problem, tc.want)
			}
		})
	}
}
