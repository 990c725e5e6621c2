package ogconfig

import (
	"encoding/json"
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
	"github.com/pictorhq/pictor/origin/imageparams"
)

// parse parses a JSON body (or a form when it starts with "form:").
func parse(t testing.TB, body string, opts Options) (Request, error) {
	t.Helper()
	if form, ok := strings.CutPrefix(body, "form:"); ok {
		v, err := url.ParseQuery(form)
		if err != nil {
			t.Fatalf("form %q: %v", form, err)
		}
		return ParseRequest(field.FromForm(v), opts)
	}
	o, err := field.ParseJSON([]byte(body))
	if err != nil {
		t.Fatalf("JSON %s: %v", body, err)
	}
	return ParseRequest(o, opts)
}

func paths(t testing.TB, err error) []string {
	t.Helper()
	var e *apierr.Error
	if !errors.As(err, &e) || e.Status != 400 {
		t.Fatalf("err = %v, want a 400 *apierr.Error", err)
	}
	var out []string
	for _, f := range e.Fields {
		if f.Message == "" {
			t.Fatalf("validation error for %s has no message", f.Path)
		}
		out = append(out, f.Path)
	}
	return out
}

// body is a minimal valid html_css request with extra fields (JSON text).
func body(extra string) string {
	b := `{"config_type":"html_css","base_url":"https://example.com"`
	if extra != "" {
		b += "," + extra
	}
	return b + "}"
}

// tbody is a minimal valid templated request with extra fields.
func tbody(extra string) string {
	b := `{"config_type":"templated","base_url":"https://example.com","template_id":"t-1"`
	if extra != "" {
		b += "," + extra
	}
	return b + "}"
}

func TestParseDefaults(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"minimal", body("")},
		{"nulls", body(`"name":null,"description":null,"disabled":null,"refresh_interval_s":null,"optimization_mode":null,"extract_values":null,"default_options":null,"template_values_mapping":null,"headers":null,"additional_header_origins":null,"max_new_images_per_day":null,"max_new_images_per_period":null`)},
		{"blanks and empties", body(`"name":"  ","description":"\t","default_options":{},"template_values_mapping":[],"headers":{},"additional_header_origins":[]`)},
		{"empty form values", "form:config_type=html_css&base_url=https://example.com&name=&disabled=&refresh_interval_s=&optimization_mode=&extract_values=&default_options=&headers=&additional_header_origins=&template_values_mapping=&max_new_images_per_day=&max_new_images_per_period="},
		{"unknown fields", body(`"id":"x","domain_id":"y","enabled":false,"created_at":5,"surprise":{"a":1}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := parse(t, tc.body, Options{})
			if err != nil {
				t.Fatal(err)
			}
			want := Request{ConfigType: HTMLCSS, BaseURL: "https://example.com", RefreshInterval: 24 * time.Hour,
				OptimizationMode: PostProcess, ExtractValues: true, DefaultOptions: map[string]json.RawMessage{}}
			if !reflect.DeepEqual(req, want) {
				t.Fatalf("got  %+v\nwant %+v", req, want)
			}
		})
	}
}

// TestParseFields: each field's values, limits and normalization; an
// invalid request names every invalid field.
func TestParseFields(t *testing.T) {
	long := func(n int) string { return strings.Repeat("é", n) }
	headers21 := map[string]string{}
	for i := range 21 {
		headers21[fmt.Sprintf("X-H%d", i)] = "v"
	}
	h21, _ := json.Marshal(headers21)
	var origins21 []string
	for i := range 21 {
		origins21 = append(origins21, fmt.Sprintf("https://o%d.example", i))
	}
	o21, _ := json.Marshal(origins21)
	var maps33 []map[string]string
	for i := range 33 {
		maps33 = append(maps33, map[string]string{"template_key": fmt.Sprint("k", i), "fallback": "titles"})
	}
	m33, _ := json.Marshal(maps33)

	tests := []struct {
		name  string
		body  string
		opts  Options
		bad   []string                        // exactly these paths, in any order
		check func(t *testing.T, req Request) // when valid
	}{
		// config_type
		{name: "config_type missing", body: `{"base_url":"https://example.com"}`, bad: []string{"config_type"}},
		{name: "config_type unknown", body: `{"config_type":"screenshot","base_url":"https://example.com"}`, bad: []string{"config_type"}},
		{name: "config_type upper case", body: `{"config_type":"HTML_CSS","base_url":"https://example.com"}`, bad: []string{"config_type"}},
		{name: "config_type not a string", body: `{"config_type":1,"base_url":"https://example.com"}`, bad: []string{"config_type"}},
		// name and description
		{name: "name at the limit", body: body(`"name":"` + long(MaxName) + `"`), check: func(t *testing.T, r Request) {
			if r.Name != long(MaxName) {
				t.Fatalf("name %q", r.Name)
			}
		}},
		{name: "name too long", body: body(`"name":"` + long(MaxName+1) + `"`), bad: []string{"name"}},
		{name: "name not a string", body: body(`"name":5`), bad: []string{"name"}},
		{name: "description at the limit", body: body(`"description":"` + long(MaxDescription) + `"`)},
		{name: "description too long", body: body(`"description":"` + long(MaxDescription+1) + `"`), bad: []string{"description"}},
		// base_url
		{name: "base_url normalized", body: `{"config_type":"html_css","base_url":" HTTPS://WWW.Example.COM:443/ "}`, check: wantBase("https://www.example.com")},
		{name: "base_url with a port", body: `{"config_type":"html_css","base_url":"http://example.com:8080"}`, check: wantBase("http://example.com:8080")},
		{name: "base_url http default port", body: `{"config_type":"html_css","base_url":"http://example.com:80/"}`, check: wantBase("http://example.com")},
		{name: "base_url IPv6", body: `{"config_type":"html_css","base_url":"https://[2606:4700:0:0::1111]:8443"}`, check: wantBase("https://[2606:4700::1111]:8443")},
		{name: "base_url missing", body: `{"config_type":"html_css"}`, bad: []string{"base_url"}},
		{name: "base_url empty", body: `{"config_type":"html_css","base_url":""}`, bad: []string{"base_url"}},
		{name: "base_url with a path", body: `{"config_type":"html_css","base_url":"https://example.com/blog"}`, bad: []string{"base_url"}},
		{name: "base_url with a query", body: `{"config_type":"html_css","base_url":"https://example.com/?a=1"}`, bad: []string{"base_url"}},
		{name: "base_url with an empty query", body: `{"config_type":"html_css","base_url":"https://example.com?"}`, bad: []string{"base_url"}},
		{name: "base_url with a fragment", body: `{"config_type":"html_css","base_url":"https://example.com#top"}`, bad: []string{"base_url"}},
		{name: "base_url with credentials", body: `{"config_type":"html_css","base_url":"https://user:pw@example.com"}`, bad: []string{"base_url"}},
		{name: "base_url ftp", body: `{"config_type":"html_css","base_url":"ftp://example.com"}`, bad: []string{"base_url"}},
		{name: "base_url without scheme", body: `{"config_type":"html_css","base_url":"example.com"}`, bad: []string{"base_url"}},
		{name: "base_url bad port", body: `{"config_type":"html_css","base_url":"https://example.com:0"}`, bad: []string{"base_url"}},
		{name: "base_url non-ASCII host", body: `{"config_type":"html_css","base_url":"https://bücher.example"}`, bad: []string{"base_url"}},
		{name: "base_url punycode host", body: `{"config_type":"html_css","base_url":"https://xn--bcher-kva.example"}`, check: wantBase("https://xn--bcher-kva.example")},
		{name: "base_url loopback refused", body: `{"config_type":"html_css","base_url":"http://127.0.0.1:8080"}`, bad: []string{"base_url"}},
		{name: "base_url localhost refused", body: `{"config_type":"html_css","base_url":"http://localhost"}`, bad: []string{"base_url"}},
		{name: "base_url loopback allowed", body: `{"config_type":"html_css","base_url":"http://127.0.0.1:8080"}`, opts: Options{AllowPrivate: true}, check: wantBase("http://127.0.0.1:8080")},
		{name: "base_url metadata refused even when private allowed", body: `{"config_type":"html_css","base_url":"http://169.254.169.254"}`, opts: Options{AllowPrivate: true}, bad: []string{"base_url"}},
		{name: "base_url not a string", body: `{"config_type":"html_css","base_url":["https://example.com"]}`, bad: []string{"base_url"}},
		// disabled, extract_values
		{name: "disabled", body: body(`"disabled":true,"extract_values":false`), check: func(t *testing.T, r Request) {
			if !r.Disabled || r.ExtractValues {
				t.Fatalf("disabled %v extract_values %v", r.Disabled, r.ExtractValues)
			}
		}},
		{name: "disabled as a string", body: body(`"disabled":"true"`), bad: []string{"disabled"}},
		{name: "extract_values as a number", body: body(`"extract_values":1`), bad: []string{"extract_values"}},
		// refresh_interval_s
		{name: "refresh minimum", body: body(`"refresh_interval_s":60`), check: wantRefresh(time.Minute)},
		{name: "refresh maximum", body: body(`"refresh_interval_s":31536000`), check: wantRefresh(365 * 24 * time.Hour)},
		{name: "refresh too short", body: body(`"refresh_interval_s":59`), bad: []string{"refresh_interval_s"}},
		{name: "refresh zero", body: body(`"refresh_interval_s":0`), bad: []string{"refresh_interval_s"}},
		{name: "refresh too long", body: body(`"refresh_interval_s":31536001`), bad: []string{"refresh_interval_s"}},
		{name: "refresh fractional", body: body(`"refresh_interval_s":60.5`), bad: []string{"refresh_interval_s"}},
		{name: "refresh as a string", body: body(`"refresh_interval_s":"3600"`), bad: []string{"refresh_interval_s"}},
		// optimization_mode
		{name: "no_optimization", body: body(`"optimization_mode":"no_optimization"`), check: wantMode(NoOptimization)},
		{name: "set_viewport", body: body(`"optimization_mode":"set_viewport"`), check: wantMode(SetViewport)},
		{name: "post_process", body: body(`"optimization_mode":"post_process"`), check: wantMode(PostProcess)},
		{name: "optimization_mode unknown", body: body(`"optimization_mode":"resize"`), bad: []string{"optimization_mode"}},
		// default_options
		{name: "default_options typed", body: body(`"default_options":{"viewport_width":1200,"viewport_height":630,"device_scale":1.5,"selector":"#card","css":"p{}","ms_delay":250,"max_wait_ms":4000,"render_when_ready":true,"transparent_background":false,"color_scheme":"dark","media_type":"print","timezone":"Europe/Paris","block_consent_banners":true,"google_fonts":"Open+Sans:wght@400;700|Roboto","disable_twemoji":false}`),
			check: wantOptions(`{"block_consent_banners":true,"color_scheme":"dark","css":"p{}","device_scale":1.5,"disable_twemoji":false,"google_fonts":"Open Sans:wght@400;700|Roboto","max_wait_ms":4000,"media_type":"print","ms_delay":250,"render_when_ready":true,"selector":"#card","timezone":"Europe/Paris","viewport_height":630,"viewport_width":1200}`)},
		{name: "default_options read leniently and normalized", body: body(`"default_options":{"viewport_width":"800","viewport_height":"600","device_scale":"2","render_when_ready":"true","color_scheme":"DARK","ms_delay":0}`),
			check: wantOptions(`{"color_scheme":"dark","device_scale":2,"render_when_ready":true,"viewport_height":600,"viewport_width":800}`)},
		{name: "default_options unknown names ignored", body: body(`"default_options":{"not_a_parameter":1,"viewport_mobile":true}`), check: wantOptions(`{"viewport_mobile":true}`)},
		{name: "default_options invalid values", body: body(`"default_options":{"device_scale":9,"viewport_width":800,"timezone":"Mars/Olympus","ms_delay":-1}`),
			bad: []string{"default_options.device_scale", "default_options.viewport_height", "default_options.timezone", "default_options.ms_delay"}},
		{name: "default_options creation parameters that do not apply", body: body(`"default_options":{"url":"https://example.com","html":"x","format":"jpg","pdf_options":{},"full_screen":true,"proxy_id":"p","headers":{"A":"b"}}`),
			bad: []string{"default_options.url", "default_options.html", "default_options.format", "default_options.pdf_options", "default_options.full_screen", "default_options.proxy_id", "default_options.headers"}},
		{name: "default_options max_wait_ms over the plan cap", body: body(`"default_options":{"max_wait_ms":8000}`), opts: Options{MaxWaitCap: 5 * time.Second}, bad: []string{"default_options.max_wait_ms"}},
		{name: "default_options max_wait_ms within the plan cap", body: body(`"default_options":{"max_wait_ms":5000}`), opts: Options{MaxWaitCap: 5 * time.Second}, check: wantOptions(`{"max_wait_ms":5000}`)},
		{name: "default_options viewport too large at its scale", body: body(`"default_options":{"viewport_width":6000,"viewport_height":6000,"device_scale":3}`), bad: []string{"default_options.viewport_width"}},
		{name: "default_options viewport at a URL render's scale", body: body(`"default_options":{"viewport_width":6000,"viewport_height":6000}`), check: wantOptions(`{"viewport_height":6000,"viewport_width":6000}`)},
		{name: "default_options viewport at an HTML render's scale", body: tbody(`"default_options":{"viewport_width":6000,"viewport_height":6000}`), bad: []string{"default_options.viewport_width"}},
		{name: "default_options not an object", body: body(`"default_options":[1]`), bad: []string{"default_options"}},
		{name: "default_options a JSON string in JSON", body: body(`"default_options":"{}"`), bad: []string{"default_options"}},
		// template fields
		{name: "templated", body: tbody(`"template_version":3`), check: func(t *testing.T, r Request) {
			if r.ConfigType != Templated || r.TemplateID != "t-1" || r.TemplateVersion != 3 {
				t.Fatalf("template %+v", r)
			}
		}},
		{name: "templated without template_id", body: `{"config_type":"templated","base_url":"https://example.com"}`, bad: []string{"template_id"}},
		{name: "template_id malformed", body: `{"config_type":"templated","base_url":"https://example.com","template_id":"abc"}`, bad: []string{"template_id"}},
		{name: "template_id too long", body: `{"config_type":"templated","base_url":"https://example.com","template_id":"t-` + strings.Repeat("a", 99) + `"}`, bad: []string{"template_id"}},
		{name: "template_version zero", body: tbody(`"template_version":0`), bad: []string{"template_version"}},
		{name: "template_version a string", body: tbody(`"template_version":"2"`), bad: []string{"template_version"}},
		{name: "template fields on html_css", body: body(`"template_id":"t-1","template_version":1`), bad: []string{"template_id", "template_version"}},
		// template_values_mapping
		{name: "mapping", body: tbody(`"template_values_mapping":[{"template_key":"title","meta_key":"og:title"},{"template_key":"desc","fallback":"descriptions","extra":1},{"template_key":"t2","fallback":"titles","meta_key":null}]`),
			check: func(t *testing.T, r Request) {
				want := []Mapping{{TemplateKey: "title", MetaKey: "og:title"}, {TemplateKey: "desc", Fallback: FallbackDescriptions}, {TemplateKey: "t2", Fallback: FallbackTitles}}
				if !reflect.DeepEqual(r.Mapping, want) {
					t.Fatalf("mapping %+v", r.Mapping)
				}
			}},
		{name: "mapping of 32", body: tbody(`"template_values_mapping":` + strings.Replace(string(m33), `{"fallback":"titles","template_key":"k32"},`, "", 1)), bad: []string{"template_values_mapping"}},
		{name: "mapping of 33", body: tbody(`"template_values_mapping":` + string(m33)), bad: []string{"template_values_mapping"}},
		{name: "mapping entries invalid", body: tbody(`"template_values_mapping":[
			{"template_key":"a","meta_key":"og:title","fallback":"titles"},
			{"template_key":"b"},
			{"template_key":"c","fallback":"authors"},
			{"meta_key":"x"},
			{"template_key":"a","meta_key":"y"},
			{"template_key":"e","meta_key":"has space"},
			{"template_key":" ","meta_key":"z"},
			{"template_key":5,"meta_key":"z"},
			"nope"]`),
			bad: []string{"template_values_mapping[0]", "template_values_mapping[1]", "template_values_mapping[2].fallback", "template_values_mapping[3].template_key",
				"template_values_mapping[4].template_key", "template_values_mapping[5].meta_key", "template_values_mapping[6].template_key",
				"template_values_mapping[7].template_key", "template_values_mapping[8]"}},
		{name: "mapping not an array", body: tbody(`"template_values_mapping":{"title":"og:title"}`), bad: []string{"template_values_mapping"}},
		{name: "mapping on html_css", body: body(`"template_values_mapping":[{"template_key":"a","meta_key":"b"}]`), bad: []string{"template_values_mapping"}},
		// headers
		{name: "headers canonical", body: body(`"headers":{"x-token":" abc ","Authorization":"Bearer z"}`), check: func(t *testing.T, r Request) {
			if !reflect.DeepEqual(r.Headers, map[string]string{"X-Token": "abc", "Authorization": "Bearer z"}) {
				t.Fatalf("headers %v", r.Headers)
			}
		}},
		{name: "headers forbidden and malformed", body: body(`"headers":{"Host":"a","Connection":"b","Proxy-Authorization":"c","Bad Name":"d","X-A":"line\r\nbreak","X-B":5,"x-b":"dup"}`),
			bad: []string{"headers.Host", "headers.Connection", "headers.Proxy-Authorization", "headers.Bad Name", "headers.X-A", "headers.X-B", "headers.x-b"}},
		{name: "headers over the limit", body: body(`"headers":` + string(h21)), bad: []string{"headers"}},
		{name: "header value too long", body: body(`"headers":{"X-A":"` + strings.Repeat("v", imageparams.MaxHeaderValueBytes+1) + `"}`), bad: []string{"headers.X-A"}},
		{name: "headers not an object", body: body(`"headers":["A:b"]`), bad: []string{"headers"}},
		// additional_header_origins
		{name: "origins normalized", body: body(`"additional_header_origins":["https://B.example:443/","http://a.example","https://b.example"]`), check: func(t *testing.T, r Request) {
			if !slices.Equal(r.AdditionalHeaderOrigins, []string{"http://a.example", "https://b.example"}) {
				t.Fatalf("origins %q", r.AdditionalHeaderOrigins)
			}
		}},
		{name: "origins invalid", body: body(`"additional_header_origins":["https://a.example/path","https://ok.example","ftp://b"]`),
			bad: []string{"additional_header_origins[0]", "additional_header_origins[2]"}},
		{name: "origin not a string", body: body(`"additional_header_origins":["https://a.example",5]`), bad: []string{"additional_header_origins[1]"}},
		{name: "origins over the limit", body: body(`"additional_header_origins":` + string(o21)), bad: []string{"additional_header_origins"}},
		// several at once
		{name: "several at once", body: `{"config_type":"x","name":7,"base_url":"https://example.com/x","refresh_interval_s":1,"optimization_mode":"?","default_options":{"device_scale":0},"headers":{"Host":"h"}}`,
			bad: []string{"config_type", "name", "base_url", "refresh_interval_s", "optimization_mode", "default_options.device_scale", "headers.Host"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := parse(t, tc.body, tc.opts)
			if tc.bad == nil {
				if err != nil {
					t.Fatalf("%v: %v", err, paths(t, err))
				}
				if tc.check != nil {
					tc.check(t, req)
				}
				return
			}
			got := paths(t, err)
			if !sameSet(got, tc.bad) {
				t.Fatalf("validation errors name %q, want %q", got, tc.bad)
			}
		})
	}
}

// TestParseImageCaps: max_new_images_per_day and
// max_new_images_per_period are whole numbers from 0 to the plan's
// credits per billing period, or null (absent, an empty form value) for
// the default; JSON types are strict, forms are text.
func TestParseImageCaps(t *testing.T) {
	free := Options{PlanCredits: 50}
	type caps struct{ day, period *int64 }
	n := func(v int64) *int64 { return &v }
	tests := []struct {
		name string
		body string
		opts Options
		want caps
		bad  map[string]string // path → a word of its message
	}{
		{name: "absent", body: body(""), opts: free},
		{name: "null", body: body(`"max_new_images_per_day":null,"max_new_images_per_period":null`), opts: free},
		{name: "set", body: body(`"max_new_images_per_day":5,"max_new_images_per_period":40`), opts: free, want: caps{n(5), n(40)}},
		{name: "zero: only images that exist", body: body(`"max_new_images_per_day":0,"max_new_images_per_period":0`), opts: free, want: caps{n(0), n(0)}},
		{name: "the plan's credits", body: body(`"max_new_images_per_day":50,"max_new_images_per_period":50`), opts: free, want: caps{n(50), n(50)}},
		{name: "above the plan's credits", body: body(`"max_new_images_per_day":51,"max_new_images_per_period":1000`), opts: free,
			bad: map[string]string{"max_new_images_per_day": "50", "max_new_images_per_period": "plan"}},
		{name: "negative", body: body(`"max_new_images_per_day":-1,"max_new_images_per_period":5`), opts: free,
			bad: map[string]string{"max_new_images_per_day": "between"}},
		{name: "fractional", body: body(`"max_new_images_per_period":2.5`), opts: free,
			bad: map[string]string{"max_new_images_per_period": "integer"}},
		{name: "a JSON string", body: body(`"max_new_images_per_day":"5"`), opts: free,
			bad: map[string]string{"max_new_images_per_day": "number"}},
		{name: "a boolean", body: body(`"max_new_images_per_period":true`), opts: free,
			bad: map[string]string{"max_new_images_per_period": "number"}},
		{name: "an exponent is a number", body: body(`"max_new_images_per_period":1e1`), opts: free, want: caps{nil, n(10)}},
		{name: "no plan bound: at most MaxNewImages", body: body(`"max_new_images_per_day":2147483647,"max_new_images_per_period":2147483648`),
			bad: map[string]string{"max_new_images_per_period": "between"}},
		{name: "form", body: "form:config_type=html_css&base_url=https://example.com&max_new_images_per_day=7&max_new_images_per_period=",
			opts: free, want: caps{n(7), nil}},
		{name: "form, spaces around", body: "form:config_type=html_css&base_url=https://example.com&max_new_images_per_period=+12+", opts: free, want: caps{nil, n(12)}},
		{name: "form not a number", body: "form:config_type=html_css&base_url=https://example.com&max_new_images_per_day=ten", opts: free,
			bad: map[string]string{"max_new_images_per_day": "number"}},
		{name: "form above the plan's credits", body: "form:config_type=html_css&base_url=https://example.com&max_new_images_per_period=51", opts: free,
			bad: map[string]string{"max_new_images_per_period": "50"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := parse(t, tc.body, tc.opts)
			if tc.bad == nil {
				if err != nil {
					t.Fatalf("%v: %v", err, paths(t, err))
				}
				if !reflect.DeepEqual(caps{req.MaxNewImagesPerDay, req.MaxNewImagesPerPeriod}, tc.want) {
					t.Fatalf("caps day %v period %v, want %v %v", req.MaxNewImagesPerDay, req.MaxNewImagesPerPeriod, tc.want.day, tc.want.period)
				}
				return
			}
			var e *apierr.Error
			if !errors.As(err, &e) || e.Status != 400 || len(e.Fields) != len(tc.bad) {
				t.Fatalf("err = %v, want a 400 naming %v", err, tc.bad)
			}
			for _, f := range e.Fields {
				if word, ok := tc.bad[f.Path]; !ok || !strings.Contains(f.Message, word) {
					t.Fatalf("%s: %q, want %q in a message for one of %v", f.Path, f.Message, word, tc.bad)
				}
			}
		})
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b)) && len(a) == len(b)
}

func wantBase(want string) func(*testing.T, Request) {
	return func(t *testing.T, r Request) {
		t.Helper()
		if r.BaseURL != want {
			t.Fatalf("base_url %q, want %q", r.BaseURL, want)
		}
	}
}

func wantRefresh(want time.Duration) func(*testing.T, Request) {
	return func(t *testing.T, r Request) {
		t.Helper()
		if r.RefreshInterval != want {
			t.Fatalf("refresh interval %v, want %v", r.RefreshInterval, want)
		}
	}
}

func wantMode(want OptimizationMode) func(*testing.T, Request) {
	return func(t *testing.T, r Request) {
		t.Helper()
		if r.OptimizationMode != want {
			t.Fatalf("optimization_mode %q, want %q", r.OptimizationMode, want)
		}
	}
}

func wantOptions(want string) func(*testing.T, Request) {
	return func(t *testing.T, r Request) {
		t.Helper()
		got, _ := json.Marshal(r.DefaultOptions)
		if string(got) != want {
			t.Fatalf("default_options\n got %s\nwant %s", got, want)
		}
	}
}

// TestParseForm: a form request means what the same JSON request means.
func TestParseForm(t *testing.T) {
	asJSON := tbody(`"name":"Blog","disabled":true,"refresh_interval_s":3600,"extract_values":false,"optimization_mode":"set_viewport","template_version":2,
		"default_options":{"viewport_width":1200,"viewport_height":630,"render_when_ready":true},
		"template_values_mapping":[{"template_key":"title","fallback":"titles"}],
		"headers":{"X-Token":"abc","X-Other":"d:e"},"additional_header_origins":["https://cdn.example","https://img.example"],
		"max_new_images_per_day":3,"max_new_images_per_period":30`)
	form := url.Values{
		"max_new_images_per_day": {"3"}, "max_new_images_per_period": {"30"},
		"config_type": {"templated"}, "base_url": {"https://example.com"}, "template_id": {"t-1"}, "template_version": {"2"},
		"name": {"Blog"}, "disabled": {"true"}, "refresh_interval_s": {"3600"}, "extract_values": {"false"}, "optimization_mode": {"set_viewport"},
		"default_options":           {`{"viewport_width":"1200","viewport_height":630,"render_when_ready":"1"}`},
		"template_values_mapping":   {`[{"template_key":"title","fallback":"titles"}]`},
		"headers":                   {"X-Token:abc", "X-Other: d:e"},
		"additional_header_origins": {"https://img.example", "https://cdn.example/"},
	}
	want, err := parse(t, asJSON, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := parse(t, "form:"+form.Encode(), Options{})
	if err != nil {
		t.Fatalf("%v: %v", err, paths(t, err))
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("form  %+v\njson  %+v", got, want)
	}
	// Other spellings forms allow.
	form.Set("headers", `{"X-Token":"abc","X-Other":"d:e"}`)
	form.Set("additional_header_origins", `["https://img.example","https://cdn.example"]`)
	if got, err = parse(t, "form:"+form.Encode(), Options{}); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("form with JSON-encoded headers and origins: %+v, %v", got, err)
	}

	for _, tc := range []struct {
		name string
		form url.Values
		bad  []string
	}{
		{"default_options not JSON", url.Values{"default_options": {"viewport_width=5"}}, []string{"default_options"}},
		{"mapping not JSON", url.Values{"template_values_mapping": {"title=og:title"}}, []string{"template_values_mapping"}},
		{"header without a colon", url.Values{"headers": {"X-Token"}}, []string{"headers"}},
		{"a boolean that is not one", url.Values{"disabled": {"maybe"}}, []string{"disabled"}},
		{"a number that is not one", url.Values{"refresh_interval_s": {"soon"}}, []string{"refresh_interval_s"}},
		{"invalid UTF-8", url.Values{"name": {"\xff"}}, []string{"name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := url.Values{"config_type": {"html_css"}, "base_url": {"https://example.com"}}
			for k, v := range tc.form {
				f[k] = v
			}
			_, err := parse(t, "form:"+f.Encode(), Options{})
			if got := paths(t, err); !sameSet(got, tc.bad) {
				t.Fatalf("validation errors name %q, want %q", got, tc.bad)
			}
		})
	}
}

// TestDefaultOptionsRoundTrip: stored default_options parse into the same
// parameters as the request they came from, and store unchanged again.
func TestDefaultOptionsRoundTrip(t *testing.T) {
	for i, opts := range []string{
		`{}`,
		`{"viewport_width":"1200","viewport_height":630,"device_scale":"1.25","viewport_mobile":"true","viewport_landscape":true,"viewport_touch":1}`,
		`{"selector":" main > h1 ","css":"h1{color:red}","google_fonts":"Open+Sans:wght@400;700| Roboto ","timezone":"America/New_York"}`,
		`{"ms_delay":"10000","max_wait_ms":500,"render_when_ready":"on","transparent_background":true,"block_consent_banners":true}`,
		`{"color_scheme":"Light","media_type":"SCREEN","disable_twemoji":"false","include_headers_on_subrequests":true,"identify_as_service":true}`,
		`{"render_when_ready":false,"disable_twemoji":true,"ms_delay":0}`,
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			req, err := parse(t, body(`"default_options":`+opts), Options{})
			if err != nil {
				t.Fatalf("%v: %v", err, paths(t, err))
			}
			var raw map[string]json.RawMessage
			json.Unmarshal([]byte(opts), &raw)
			want, err := imageparams.Parse(field.FromJSON(raw), imageparams.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := imageparams.Parse(field.FromJSON(req.DefaultOptions), imageparams.Options{})
			if err != nil {
				t.Fatalf("stored options %v do not parse: %v", req.DefaultOptions, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("stored options parse to\n%+v\nthe request's to\n%+v", got, want)
			}
			stored, _ := json.Marshal(req.DefaultOptions)
			again, err := parse(t, body(`"default_options":`+string(stored)), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := json.Marshal(again.DefaultOptions); string(b) != string(stored) {
				t.Fatalf("stored again %s, first %s", b, stored)
			}
		})
	}
}

// FuzzBaseURL: parseBaseURL never panics; what it accepts is an exact
// origin (scheme://host[:port], lower-case, no default port, nothing
// after), accepted again unchanged, that net/url reads the same way.
func FuzzBaseURL(f *testing.F) {
	for _, s := range []string{
		"https://example.com", "HTTP://Example.COM:80/", "https://example.com:443", "http://example.com:8080",
		"https://[::1]:8443/", "https://[fe80::1%25eth0]", "http://127.0.0.1", "https://example.com.",
		"https://user@example.com", "https://example.com/path", "https://example.com?", "https://example.com#",
		"https://example.com:", "https://example.com:65536", "https://exa mple.com", "//example.com", "example.com",
		"https:example.com", "https://", "https://xn--bcher-kva.example", "https://bücher.example", "https://a..b",
		"https://-a.example", "https://example.com:0080", " https://example.com ", "https://example.com\\@evil.com",
		"javascript://example.com", "https://%65xample.com", "\x00", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		norm, problem := parseBaseURL(s)
		if problem != "" {
			if norm != "" {
				t.Fatalf("parseBaseURL(%q) = %q with problem %q", s, norm, problem)
			}
			return
		}
		if norm == "" {
			t.Fatalf("parseBaseURL(%q) accepted nothing", s)
		}
		again, problem := parseBaseURL(norm)
		if problem != "" || again != norm {
			t.Fatalf("parseBaseURL(%q) = %q, which reads back as %q (%s)", s, norm, again, problem)
		}
		u, err := url.Parse(norm)
		if err != nil {
			t.Fatalf("parseBaseURL(%q) = %q, which net/url refuses: %v", s, norm, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			t.Fatalf("parseBaseURL(%q) = %q: scheme %q", s, norm, u.Scheme)
		}
		if u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery || u.Opaque != "" {
			t.Fatalf("parseBaseURL(%q) = %q: more than an origin (%#v)", s, norm, u)
		}
		if norm != strings.ToLower(norm) {
			t.Fatalf("parseBaseURL(%q) = %q: not lower-case", s, norm)
		}
		if p := u.Port(); (u.Scheme == "http" && p == "80") || (u.Scheme == "https" && p == "443") || strings.HasPrefix(p, "0") {
			t.Fatalf("parseBaseURL(%q) = %q: port not normalized", s, norm)
		}
		if u.Scheme+"://"+u.Host != norm || u.Hostname() == "" {
			t.Fatalf("parseBaseURL(%q) = %q, net/url reads %s://%s", s, norm, u.Scheme, u.Host)
		}
	})
}

// FuzzParseRequest: any JSON body either parses into a request within the
// limits or fails with a 400 naming fields; never panics.
func FuzzParseRequest(f *testing.F) {
	for _, seed := range []string{
		body(""), tbody(`"template_values_mapping":[{"template_key":"a","meta_key":"b"}]`),
		body(`"default_options":{"viewport_width":"5","viewport_height":5,"url":"x"}`),
		body(`"headers":{"A":"b","host":"x"},"additional_header_origins":["https://A.b:443"]`),
		`{"config_type":null,"base_url":null}`, `{}`, body(`"refresh_interval_s":1e400`),
		body(`"max_new_images_per_day":51,"max_new_images_per_period":-0.0`), body(`"max_new_images_per_period":1e400`),
	} {
		f.Add([]byte(seed), false)
	}
	f.Fuzz(func(t *testing.T, b []byte, allowPrivate bool) {
		o, err := field.ParseJSON(b)
		if err != nil {
			return
		}
		req, err := ParseRequest(o, Options{MaxWaitCap: 5 * time.Second, AllowPrivate: allowPrivate, PlanCredits: 50})
		if err != nil {
			var e *apierr.Error
			if !errors.As(err, &e) || e.Status != 400 || len(e.Fields) == 0 {
				t.Fatalf("error %v is not a 400 with validation errors", err)
			}
			return
		}
		if req.ConfigType != HTMLCSS && req.ConfigType != Templated {
			t.Fatalf("config_type %q", req.ConfigType)
		}
		if norm, problem := parseBaseURL(req.BaseURL); problem != "" || norm != req.BaseURL {
			t.Fatalf("base_url %q not normalized", req.BaseURL)
		}
		if req.RefreshInterval < MinRefreshInterval || req.RefreshInterval > MaxRefreshInterval {
			t.Fatalf("refresh interval %v", req.RefreshInterval)
		}
		if (req.ConfigType == Templated) != (req.TemplateID != "") || len(req.Mapping) > MaxMappings ||
			len(req.Headers) > MaxHeaders || len(req.AdditionalHeaderOrigins) > MaxAdditionalHeaderOrigins {
			t.Fatalf("accepted %+v", req)
		}
		if req.ConfigType == HTMLCSS && len(req.Mapping) > 0 {
			t.Fatal("accepted a mapping on html_css")
		}
		for _, c := range []*int64{req.MaxNewImagesPerDay, req.MaxNewImagesPerPeriod} {
			if c != nil && (*c < 0 || *c > 50) {
				t.Fatalf("accepted a cap of %d on a plan of 50 credits", *c)
			}
		}
		for k := range req.DefaultOptions {
			if !slices.Contains(OptionNames, k) {
				t.Fatalf("stored default option %s", k)
			}
		}
		if _, err := imageparams.Parse(field.FromJSON(req.DefaultOptions), imageparams.Options{MaxWaitCap: 5 * time.Second}); err != nil {
			t.Fatalf("stored default_options %v do not parse: %v", req.DefaultOptions, err)
		}
	})
}
