package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/org"
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

// fieldErrors returns the validation errors of a 400.
func fieldErrors(t testing.TB, err error) []apierr.FieldError {
	t.Helper()
	var e *apierr.Error
	if !errors.As(err, &e) || e.Status != 400 {
		t.Fatalf("err = %v, want a 400 *apierr.Error", err)
	}
	for _, f := range e.Fields {
		if f.Message == "" {
			t.Fatalf("validation error for %s has no message", f.Path)
		}
	}
	return e.Fields
}

func paths(t testing.TB, err error) []string {
	t.Helper()
	var out []string
	for _, f := range fieldErrors(t, err) {
		out = append(out, f.Path)
	}
	return out
}

// body is a minimal valid request with extra fields (JSON text).
func body(extra string) string {
	b := `{"name":"Office","url":"http://proxy.example.com"`
	if extra != "" {
		b += "," + extra
	}
	return b + "}"
}

// stored is a proxy as an update finds it: a password for alice at
// http://proxy.example.com:3128.
func stored(withPassword bool) *Proxy {
	p := &Proxy{ID: "0190a0b0-c0d0-7e0f-8a0b-0c0d0e0f0a0b", OrgID: "org-a", Name: "Office",
		URL: "http://proxy.example.com", Port: 3128, Username: "alice", BypassHosts: []string{}}
	if withPassword {
		p.SealedPassword = []byte("sealed")
	}
	return p
}

func TestParseDefaults(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"minimal", body("")},
		{"nulls", body(`"port":null,"disabled":null,"authentication":null,"bypass_hosts":null`)},
		{"empties", body(`"authentication":{},"bypass_hosts":[]`)},
		{"empty credentials", body(`"authentication":{"username":"","password":"","retain_password":false}`)},
		{"null credentials", body(`"authentication":{"username":null,"password":null,"retain_password":null}`)},
		{"empty form values", "form:name=Office&url=http://proxy.example.com&port=&disabled=&authentication=&bypass_hosts="},
		{"unknown fields", body(`"id":"x","enabled":false,"username":"bob","password":"secret","created_at":5,"surprise":{"a":1}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := parse(t, tc.body, Options{})
			if err != nil {
				t.Fatal(err)
			}
			want := Request{Name: "Office", URL: "http://proxy.example.com", Port: 80, BypassHosts: []string{}}
			if !reflect.DeepEqual(req, want) {
				t.Fatalf("got  %+v\nwant %+v", req, want)
			}
		})
	}
}

// TestParseFields: each field's values, limits and normalization.
func TestParseFields(t *testing.T) {
	long := func(n int) string { return strings.Repeat("é", n) }
	hosts := func(n int) string {
		var hs []string
		for i := range n {
			hs = append(hs, fmt.Sprintf("h%d.example", i))
		}
		b, _ := json.Marshal(hs)
		return string(b)
	}
	wantURL := func(u string, port int) func(*testing.T, Request) {
		return func(t *testing.T, r Request) {
			if r.URL != u || r.Port != port {
				t.Fatalf("url %q port %d, want %q %d", r.URL, r.Port, u, port)
			}
		}
	}
	wantHosts := func(hs ...string) func(*testing.T, Request) {
		return func(t *testing.T, r Request) {
			if !slices.Equal(r.BypassHosts, hs) {
				t.Fatalf("bypass_hosts %q, want %q", r.BypassHosts, hs)
			}
		}
	}
	tests := []struct {
		name  string
		body  string
		opts  Options
		bad   []string // exactly these paths, in any order
		check func(t *testing.T, req Request)
	}{
		// name
		{name: "name at the minimum", body: `{"name":"abc","url":"http://p.example"}`},
		{name: "name at the maximum", body: `{"name":"` + long(MaxName) + `","url":"http://p.example"}`, check: func(t *testing.T, r Request) {
			if r.Name != long(MaxName) {
				t.Fatal("name changed")
			}
		}},
		{name: "name trimmed", body: `{"name":"  Office \t","url":"http://p.example"}`, check: func(t *testing.T, r Request) {
			if r.Name != "Office" {
				t.Fatalf("name %q", r.Name)
			}
		}},
		{name: "name too short", body: `{"name":"ab","url":"http://p.example"}`, bad: []string{"name"}},
		{name: "name too short once trimmed", body: `{"name":"  ab  ","url":"http://p.example"}`, bad: []string{"name"}},
		{name: "name too long", body: `{"name":"` + long(MaxName+1) + `","url":"http://p.example"}`, bad: []string{"name"}},
		{name: "name missing", body: `{"url":"http://p.example"}`, bad: []string{"name"}},
		{name: "name blank", body: `{"name":"   ","url":"http://p.example"}`, bad: []string{"name"}},
		{name: "name with a newline", body: `{"name":"Off\nice","url":"http://p.example"}`, bad: []string{"name"}},
		{name: "name not a string", body: `{"name":500,"url":"http://p.example"}`, bad: []string{"name"}},

		// url
		{name: "url http default port", body: body(""), check: wantURL("http://proxy.example.com", 80)},
		{name: "url https default port", body: `{"name":"Office","url":"https://proxy.example.com"}`, check: wantURL("https://proxy.example.com", 443)},
		{name: "url normalized", body: `{"name":"Office","url":" HTTPS://Proxy.EXAMPLE.com./ "}`, check: wantURL("https://proxy.example.com", 443)},
		{name: "url IPv4", body: `{"name":"Office","url":"http://93.184.216.34"}`, check: wantURL("http://93.184.216.34", 80)},
		{name: "url IPv6", body: `{"name":"Office","url":"http://[2606:4700:0:0::1111]:8080"}`, check: wantURL("http://[2606:4700::1111]", 8080)},
		{name: "url documentation address", body: `{"name":"Office","url":"http://203.0.113.7"}`, bad: []string{"url"}},
		{name: "url xn-- name", body: `{"name":"Office","url":"http://xn--bcher-kva.example"}`, check: wantURL("http://xn--bcher-kva.example", 80)},
		{name: "url missing", body: `{"name":"Office"}`, bad: []string{"url"}},
		{name: "url empty", body: `{"name":"Office","url":""}`, bad: []string{"url"}},
		{name: "url not a string", body: `{"name":"Office","url":{"host":"p"}}`, bad: []string{"url"}},
		{name: "url ftp", body: `{"name":"Office","url":"ftp://p.example"}`, bad: []string{"url"}},
		{name: "url socks5", body: `{"name":"Office","url":"socks5://p.example"}`, bad: []string{"url"}},
		{name: "url without scheme", body: `{"name":"Office","url":"p.example:3128"}`, bad: []string{"url"}},
		{name: "url scheme-relative", body: `{"name":"Office","url":"//p.example"}`, bad: []string{"url"}},
		{name: "url path", body: `{"name":"Office","url":"http://p.example/proxy"}`, bad: []string{"url"}},
		{name: "url double slash path", body: `{"name":"Office","url":"http://p.example//"}`, bad: []string{"url"}},
		{name: "url query", body: `{"name":"Office","url":"http://p.example?x=1"}`, bad: []string{"url"}},
		{name: "url empty query", body: `{"name":"Office","url":"http://p.example/?"}`, bad: []string{"url"}},
		{name: "url fragment", body: `{"name":"Office","url":"http://p.example#top"}`, bad: []string{"url"}},
		{name: "url credentials", body: `{"name":"Office","url":"http://bob:pw@p.example"}`, bad: []string{"url"}},
		{name: "url user only", body: `{"name":"Office","url":"http://bob@p.example"}`, bad: []string{"url"}},
		{name: "url no host", body: `{"name":"Office","url":"http://:3128"}`, bad: []string{"url"}},
		{name: "url nothing after the scheme", body: `{"name":"Office","url":"http://"}`, bad: []string{"url"}},
		{name: "url backslash", body: `{"name":"Office","url":"http://p.example\\@evil.example"}`, bad: []string{"url"}},
		{name: "url space", body: `{"name":"Office","url":"http://p .example"}`, bad: []string{"url"}},
		{name: "url unicode host", body: `{"name":"Office","url":"http://bücher.example"}`, bad: []string{"url"}},
		{name: "url bad label", body: `{"name":"Office","url":"http://-p.example"}`, bad: []string{"url"}},
		{name: "url empty label", body: `{"name":"Office","url":"http://p..example"}`, bad: []string{"url"}},
		{name: "url numeric last label", body: `{"name":"Office","url":"http://p.123"}`, bad: []string{"url"}},
		{name: "url hex IPv4", body: `{"name":"Office","url":"http://0x7f000001"}`, bad: []string{"url"}},
		{name: "url short IPv4", body: `{"name":"Office","url":"http://1.2.3"}`, bad: []string{"url"}},
		{name: "url unbracketed IPv6", body: `{"name":"Office","url":"http://2001:db8::1"}`, bad: []string{"url"}},
		{name: "url IPv6 zone", body: `{"name":"Office","url":"http://[fe80::1%25eth0]"}`, bad: []string{"url"}},
		{name: "url loopback", body: `{"name":"Office","url":"http://127.0.0.1"}`, bad: []string{"url"}},
		{name: "url private", body: `{"name":"Office","url":"http://10.1.2.3:3128"}`, bad: []string{"url"}},
		{name: "url IPv6 loopback", body: `{"name":"Office","url":"http://[::1]"}`, bad: []string{"url"}},
		{name: "url localhost", body: `{"name":"Office","url":"http://localhost:3128"}`, bad: []string{"url"}},
		{name: "url metadata", body: `{"name":"Office","url":"http://169.254.169.254"}`, bad: []string{"url"}},
		{name: "url private allowed", body: `{"name":"Office","url":"http://10.1.2.3:3128"}`, opts: Options{AllowPrivate: true}, check: wantURL("http://10.1.2.3", 3128)},
		{name: "url localhost allowed", body: `{"name":"Office","url":"http://LOCALHOST"}`, opts: Options{AllowPrivate: true}, check: wantURL("http://localhost", 80)},
		{name: "url metadata even so", body: `{"name":"Office","url":"http://169.254.169.254"}`, opts: Options{AllowPrivate: true}, bad: []string{"url"}},
		{name: "url metadata name even so", body: `{"name":"Office","url":"http://metadata.google.internal"}`, opts: Options{AllowPrivate: true}, bad: []string{"url"}},
		{name: "url too long", body: `{"name":"Office","url":"http://` + strings.Repeat("a", MaxURLLength) + `"}`, bad: []string{"url"}},

		// port
		{name: "port", body: body(`"port":3128`), check: wantURL("http://proxy.example.com", 3128)},
		{name: "port minimum", body: body(`"port":1`), check: wantURL("http://proxy.example.com", 1)},
		{name: "port maximum", body: body(`"port":65535`), check: wantURL("http://proxy.example.com", 65535)},
		{name: "port overrides the default of https", body: `{"name":"Office","url":"https://p.example","port":80}`, check: wantURL("https://p.example", 80)},
		{name: "port zero", body: body(`"port":0`), bad: []string{"port"}},
		{name: "port too large", body: body(`"port":65536`), bad: []string{"port"}},
		{name: "port negative", body: body(`"port":-1`), bad: []string{"port"}},
		{name: "port fraction", body: body(`"port":80.5`), bad: []string{"port"}},
		{name: "port huge", body: body(`"port":1e400`), bad: []string{"port"}},
		{name: "port as a string", body: body(`"port":"8080"`), bad: []string{"port"}},
		{name: "port from url", body: `{"name":"Office","url":"http://p.example:3128"}`, check: wantURL("http://p.example", 3128)},
		{name: "port from url, default spelled", body: `{"name":"Office","url":"https://p.example:443/"}`, check: wantURL("https://p.example", 443)},
		{name: "port from url, leading zeros", body: `{"name":"Office","url":"http://p.example:03128"}`, check: wantURL("http://p.example", 3128)},
		{name: "port in both, same", body: `{"name":"Office","url":"http://p.example:3128","port":3128}`, check: wantURL("http://p.example", 3128)},
		{name: "port in both, different", body: `{"name":"Office","url":"http://p.example:3128","port":8080}`, bad: []string{"port"}},
		{name: "port in url, default in both", body: `{"name":"Office","url":"http://p.example:80","port":8080}`, bad: []string{"port"}},
		{name: "port in url zero", body: `{"name":"Office","url":"http://p.example:0"}`, bad: []string{"url"}},
		{name: "port in url too large", body: `{"name":"Office","url":"http://p.example:65536"}`, bad: []string{"url"}},
		{name: "port in url empty", body: `{"name":"Office","url":"http://p.example:"}`, bad: []string{"url"}},
		{name: "port in url signed", body: `{"name":"Office","url":"http://p.example:+80"}`, bad: []string{"url"}},

		// disabled
		{name: "disabled", body: body(`"disabled":true`), check: func(t *testing.T, r Request) {
			if !r.Disabled {
				t.Fatal("not disabled")
			}
		}},
		{name: "disabled as a string", body: body(`"disabled":"true"`), bad: []string{"disabled"}},
		{name: "disabled as a number", body: body(`"disabled":1`), bad: []string{"disabled"}},

		// authentication
		{name: "credentials", body: body(`"authentication":{"username":"alice","password":"pw"}`), check: func(t *testing.T, r Request) {
			if r.Username != "alice" || r.Password != "pw" || r.RetainPassword {
				t.Fatalf("%q %q %v", r.Username, string(r.Password), r.RetainPassword)
			}
		}},
		{name: "username alone", body: body(`"authentication":{"username":"alice"}`), check: func(t *testing.T, r Request) {
			if r.Username != "alice" || r.Password != "" {
				t.Fatalf("%q %q", r.Username, string(r.Password))
			}
		}},
		{name: "credentials at the limits", body: body(`"authentication":{"username":"` + long(MaxUsername) + `","password":"` + long(MaxPassword) + `"}`)},
		{name: "username too long", body: body(`"authentication":{"username":"` + long(MaxUsername+1) + `","password":"pw"}`), bad: []string{"authentication.username"}},
		{name: "password too long", body: body(`"authentication":{"username":"alice","password":"` + long(MaxPassword+1) + `"}`), bad: []string{"authentication.password"}},
		{name: "username with a colon", body: body(`"authentication":{"username":"a:b"}`), bad: []string{"authentication.username"}},
		{name: "username with a control character", body: body(`"authentication":{"username":"a\u0000b"}`), bad: []string{"authentication.username"}},
		{name: "password with a newline", body: body(`"authentication":{"username":"a","password":"p\r\nw"}`), bad: []string{"authentication.password"}},
		{name: "password with a colon", body: body(`"authentication":{"username":"a","password":"p:w"}`)},
		{name: "password without username", body: body(`"authentication":{"password":"pw"}`), bad: []string{"authentication.password"}},
		{name: "password with an empty username", body: body(`"authentication":{"username":"","password":"pw"}`), bad: []string{"authentication.password"}},
		{name: "authentication not an object", body: body(`"authentication":"alice:pw"`), bad: []string{"authentication"}},
		{name: "authentication an array", body: body(`"authentication":[]`), bad: []string{"authentication"}},
		{name: "username not a string", body: body(`"authentication":{"username":5}`), bad: []string{"authentication.username"}},
		{name: "password not a string", body: body(`"authentication":{"username":"a","password":5}`), bad: []string{"authentication.password"}},
		{name: "retain_password not a boolean", body: body(`"authentication":{"username":"a","retain_password":"true"}`), bad: []string{"authentication.retain_password"}},
		{name: "retain_password false is ignored", body: body(`"authentication":{"username":"a","password":"pw","retain_password":false}`), check: func(t *testing.T, r Request) {
			if r.Password != "pw" || r.RetainPassword {
				t.Fatal("retain_password false changed the request")
			}
		}},
		{name: "unknown authentication field", body: body(`"authentication":{"username":"a","token":"x"}`)},

		// bypass_hosts
		{name: "bypass hosts normalized", body: body(`"bypass_hosts":["Intranet.Example.", " a.example ", "*.CDN.example", "203.0.113.7", "[2001:DB8::1]", "2001:db8:0::2", "under_score.example"]`),
			check: wantHosts("intranet.example", "a.example", "*.cdn.example", "203.0.113.7", "2001:db8::1", "2001:db8::2", "under_score.example")},
		{name: "bypass hosts deduplicated in order", body: body(`"bypass_hosts":["b.example","A.example","a.example","B.EXAMPLE.","[::1]","::1","*.b.example"]`),
			check: wantHosts("b.example", "a.example", "::1", "*.b.example")},
		{name: "bypass hosts local names", body: body(`"bypass_hosts":["localhost","10.0.0.1","intranet"]`), check: wantHosts("localhost", "10.0.0.1", "intranet")},
		{name: "bypass hosts at the limit", body: body(`"bypass_hosts":` + hosts(MaxBypassHosts))},
		{name: "bypass hosts too many", body: body(`"bypass_hosts":` + hosts(MaxBypassHosts+1)), bad: []string{"bypass_hosts"}},
		{name: "bypass hosts too many duplicates", body: body(`"bypass_hosts":[` + strings.TrimSuffix(strings.Repeat(`"a.example",`, MaxBypassHosts+1), ",") + `]`), bad: []string{"bypass_hosts"}},
		{name: "bypass hosts not an array", body: body(`"bypass_hosts":"a.example"`), bad: []string{"bypass_hosts"}},
		{name: "bypass host not a string", body: body(`"bypass_hosts":["a.example",5,null]`), bad: []string{"bypass_hosts[1]", "bypass_hosts[2]"}},
		{name: "bypass hosts invalid", body: body(`"bypass_hosts":["", "http://a.example", "a.example:80", "[::1]:80", "10.0.0.0/8", "*", "a.*.example", "*example.com", "*.10.0.0.1", "bücher.example", "a..example", "-a.example", "0x7f000001", "fe80::1%eth0", "*.", "a b"]`),
			bad: []string{"bypass_hosts[0]", "bypass_hosts[1]", "bypass_hosts[2]", "bypass_hosts[3]", "bypass_hosts[4]", "bypass_hosts[5]", "bypass_hosts[6]", "bypass_hosts[7]",
				"bypass_hosts[8]", "bypass_hosts[9]", "bypass_hosts[10]", "bypass_hosts[11]", "bypass_hosts[12]", "bypass_hosts[13]", "bypass_hosts[14]", "bypass_hosts[15]"}},

		// several at once
		{name: "every field invalid", body: `{"name":"x","url":"ftp://p.example","port":0,"disabled":"no","authentication":{"username":"a:b","password":5,"retain_password":1},"bypass_hosts":["a.example:1"]}`,
			bad: []string{"name", "url", "port", "disabled", "authentication.username", "authentication.password", "authentication.retain_password", "bypass_hosts[0]"}},
		{name: "empty object", body: `{}`, bad: []string{"name", "url"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := parse(t, tc.body, tc.opts)
			if len(tc.bad) > 0 {
				got := paths(t, err)
				if !sameSet(got, tc.bad) {
					t.Fatalf("invalid fields %q, want %q", got, tc.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				tc.check(t, req)
			}
		})
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestParseRetainPassword: retain_password keeps a stored password for the
// same username, url and port, on updates only, never with a password.
func TestParseRetainPassword(t *testing.T) {
	const same = `"name":"Office","url":"http://proxy.example.com:3128"`
	retain := func(extra string) string {
		return `{` + same + `,"authentication":{"username":"alice","retain_password":true` + extra + `}}`
	}
	tests := []struct {
		name    string
		body    string
		current *Proxy
		bad     string // the invalid field, "" when valid
		message string // a fragment of its message
	}{
		{name: "same username, url and port", body: retain(""), current: stored(true)},
		{name: "same, port written apart", body: `{"name":"Renamed","url":"http://PROXY.example.com/","port":3128,"disabled":true,"bypass_hosts":["a.example"],"authentication":{"username":"alice","retain_password":true}}`, current: stored(true)},
		{name: "on a creation", body: retain(""), bad: "authentication.retain_password", message: "only for updates"},
		{name: "nothing stored", body: retain(""), current: stored(false), bad: "authentication.retain_password", message: "none is stored"},
		{name: "with a password", body: retain(`,"password":"new"`), current: stored(true), bad: "authentication.retain_password", message: "cannot be sent with authentication.password"},
		{name: "with an empty password", body: retain(`,"password":""`), current: stored(true), bad: "authentication.retain_password", message: "cannot be sent with authentication.password"},
		{name: "with a password, on a creation", body: retain(`,"password":"new"`), bad: "authentication.retain_password", message: "cannot be sent with authentication.password"},
		{name: "another username", body: `{` + same + `,"authentication":{"username":"bob","retain_password":true}}`, current: stored(true), bad: "authentication.retain_password", message: "same username"},
		{name: "username case differs", body: `{` + same + `,"authentication":{"username":"Alice","retain_password":true}}`, current: stored(true), bad: "authentication.retain_password", message: "same username"},
		{name: "no username", body: `{` + same + `,"authentication":{"retain_password":true}}`, current: stored(true), bad: "authentication.retain_password", message: "same username"},
		{name: "another host", body: `{"name":"Office","url":"http://evil.example:3128","authentication":{"username":"alice","retain_password":true}}`, current: stored(true), bad: "authentication.retain_password", message: "same url and port"},
		{name: "another scheme", body: `{"name":"Office","url":"https://proxy.example.com:3128","authentication":{"username":"alice","retain_password":true}}`, current: stored(true), bad: "authentication.retain_password", message: "same url and port"},
		{name: "another port", body: `{"name":"Office","url":"http://proxy.example.com","authentication":{"username":"alice","retain_password":true}}`, current: stored(true), bad: "authentication.retain_password", message: "same url and port"},
		{name: "invalid url is reported alone", body: `{"name":"Office","url":"http://proxy.example.com/x","authentication":{"username":"alice","retain_password":true}}`, current: stored(true), bad: "url"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := parse(t, tc.body, Options{Current: tc.current})
			if tc.bad == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !req.RetainPassword || req.Password != "" || req.Username != "alice" {
					t.Fatalf("request %+v", req)
				}
				if problem := retainProblem(tc.current, req); problem != "" {
					t.Fatalf("the store would refuse what the request accepted: %s", problem)
				}
				return
			}
			fs := fieldErrors(t, err)
			if len(fs) != 1 || fs[0].Path != tc.bad || !strings.Contains(fs[0].Message, tc.message) {
				t.Fatalf("errors %+v, want one for %s mentioning %q", fs, tc.bad, tc.message)
			}
		})
	}
}

// TestParseForms: URL-encoded forms read what the same JSON reads.
func TestParseForms(t *testing.T) {
	asJSON, err := parse(t, `{"name":"Office","url":"https://p.example","port":8443,"disabled":true,`+
		`"authentication":{"username":"alice","password":"pw"},"bypass_hosts":["a.example","*.b.example"]}`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		form url.Values
	}{
		{"repeated hosts", url.Values{"bypass_hosts": {"a.example", "", "*.b.example"}}},
		{"hosts as JSON", url.Values{"bypass_hosts": {`["a.example","*.b.example"]`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := url.Values{"name": {"Office"}, "url": {"https://p.example"}, "port": {"8443"}, "disabled": {"true"},
				"authentication": {`{"username":"alice","password":"pw"}`}, "ignored": {"x"}}
			for k, vs := range tc.form {
				v[k] = vs
			}
			req, err := ParseRequest(field.FromForm(v), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(req, asJSON) {
				t.Fatalf("form %+v\nJSON %+v", req, asJSON)
			}
		})
	}
	for _, tc := range []struct {
		name, form string
		bad        []string
	}{
		{"authentication not JSON", "name=Office&url=http://p.example&authentication=alice", []string{"authentication"}},
		{"authentication with strict types inside", `name=Office&url=http://p.example&authentication={"username":"a","retain_password":"true"}`, []string{"authentication.retain_password"}},
		{"bad port", "name=Office&url=http://p.example&port=eighty", []string{"port"}},
		{"bad boolean", "name=Office&url=http://p.example&disabled=maybe", []string{"disabled"}},
		{"invalid UTF-8", "name=Off%FFice&url=http://p.example&bypass_hosts=a%FF.example", []string{"name", "bypass_hosts[0]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, "form:"+tc.form, Options{})
			if got := paths(t, err); !sameSet(got, tc.bad) {
				t.Fatalf("invalid fields %q, want %q", got, tc.bad)
			}
		})
	}
}

// TestMessagesHideSecrets: no validation message quotes the url (which may
// hold credentials) or the password.
func TestMessagesHideSecrets(t *testing.T) {
	const secret = "hunter2-secret"
	for _, b := range []string{
		`{"name":"Office","url":"http://bob:` + secret + `@p.example"}`,
		`{"name":"Office","url":"http://p.example/` + secret + `"}`,
		`{"name":"Office","url":"http://p.example?` + secret + `"}`,
		`{"name":"Office","url":"` + secret + `://p.example"}`,
		`{"name":"Office","url":"http://p.example:` + secret + `"}`,
		body(`"authentication":{"username":"a","password":"` + secret + strings.Repeat("x", MaxPassword) + `"}`),
		body(`"authentication":{"username":"a","password":"` + secret + `\n"}`),
		body(`"authentication":{"password":"` + secret + `"}`),
		body(`"authentication":{"username":"a","password":"` + secret + `","retain_password":true}`),
	} {
		_, err := parse(t, b, Options{Current: stored(true)})
		e := apierr.From(err)
		if e.Status != 400 {
			t.Fatalf("%s: %v", b, err)
		}
		out, _ := json.Marshal(e.Body())
		if bytes.Contains(out, []byte(secret)) || strings.Contains(err.Error(), secret) {
			t.Fatalf("the answer to %s quotes the secret: %s", b, out)
		}
	}
}

// TestSecretRedacted: a Request printed, logged or marshalled never shows
// its password.
func TestSecretRedacted(t *testing.T) {
	const secret = "hunter2-secret"
	req := Request{Name: "Office", Username: "alice", Password: Secret(secret)}
	var out bytes.Buffer
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%10.3s"} {
		fmt.Fprintf(&out, verb+"\n", req)
		fmt.Fprintf(&out, verb+"\n", req.Password)
		fmt.Fprintf(&out, verb+"\n", &req)
	}
	fmt.Fprintln(&out, req, req.Password)
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	out.Write(b)
	slog.New(slog.NewJSONHandler(&out, nil)).Info("request", "request", req, "password", req.Password)
	slog.New(slog.NewTextHandler(&out, nil)).Info("request", "request", req, "password", req.Password)
	if strings.Contains(out.String(), secret) || strings.Contains(out.String(), fmt.Sprintf("%x", secret)) {
		t.Fatalf("the password shows:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "[redacted]") {
		t.Fatalf("no redaction mark:\n%s", out.String())
	}
	if string(req.Password) != secret {
		t.Fatal("the conversion lost the password")
	}
}

func TestBypasses(t *testing.T) {
	p := &Proxy{BypassHosts: []string{"intranet.example", "*.cdn.example", "203.0.113.7", "2001:db8::1", "localhost"}}
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"intranet.example", true},
		{"INTRANET.example.", true},
		{"www.intranet.example", false},
		{"intranet.example.com", false},
		{"a.cdn.example", true},
		{"a.b.CDN.example", true},
		{"cdn.example", false},
		{"xcdn.example", false},
		{"203.0.113.7", true},
		{"203.0.113.8", false},
		{"[2001:db8::1]", true},
		{"2001:DB8:0::1", true},
		{"[2001:db8::2]", false},
		{"localhost", true},
		{"example.com", false},
		{"", false},
	} {
		t.Run(tc.host, func(t *testing.T) {
			if got := p.Bypasses(tc.host); got != tc.want {
				t.Fatalf("Bypasses(%q) = %v, want %v", tc.host, got, tc.want)
			}
		})
	}
	if (&Proxy{}).Bypasses("example.com") {
		t.Fatal("a proxy without bypass hosts bypasses")
	}
}

func TestAddress(t *testing.T) {
	for _, tc := range []struct {
		url          string
		port         int
		scheme, addr string
	}{
		{"http://proxy.example.com", 3128, "http", "proxy.example.com:3128"},
		{"https://203.0.113.7", 443, "https", "203.0.113.7:443"},
		{"http://[2001:db8::1]", 8080, "http", "[2001:db8::1]:8080"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			p := &Proxy{URL: tc.url, Port: tc.port}
			if p.Scheme() != tc.scheme || p.Address() != tc.addr {
				t.Fatalf("Scheme %q Address %q", p.Scheme(), p.Address())
			}
		})
	}
}

func TestCheckPlan(t *testing.T) {
	for _, tc := range []struct {
		plan string
		ok   bool
	}{
		{"free", false},
		{"basic", false},
		{"pro", true},
		{"scale", true},
		{"unknown", false},
		{"", false},
	} {
		t.Run(tc.plan, func(t *testing.T) {
			err := CheckPlan(&org.Org{ID: "org-a", Plan: tc.plan})
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var e *apierr.Error
			if !errors.As(err, &e) || e.Status != 403 || !strings.Contains(e.Message, "Proxies need the pro plan or higher (10,000 images a month)") {
				t.Fatalf("CheckPlan = %v", err)
			}
			if tc.plan != "" && !strings.Contains(e.Message, "on the "+tc.plan+" plan") {
				t.Fatalf("message %q does not name the plan", e.Message)
			}
		})
	}
	if err := CheckPlan(nil); err == nil {
		t.Fatal("no organization passed")
	}
}

// FuzzParseRequest: whatever the body, ParseRequest answers a 400 with
// validation errors or a request within every rule.
func FuzzParseRequest(f *testing.F) {
	for _, seed := range []string{
		body(""), body(`"port":3128,"disabled":true`),
		`{"name":"Office","url":"https://[2001:db8::1]:8443/","bypass_hosts":["*.A.example","::1","[::1]"]}`,
		body(`"authentication":{"username":"alice","password":"pw"}`),
		body(`"authentication":{"username":"alice","retain_password":true}`),
		`{"name":"Office","url":"http://proxy.example.com:3128","authentication":{"username":"alice","retain_password":true}}`,
		`{"name":"x","url":"ftp://a@b/c?d#e","port":1e400,"authentication":"x","bypass_hosts":"y"}`,
		`{"name":null,"url":null}`, `{}`, body(`"bypass_hosts":["0x7f000001","1.2.3","a..b","*.","*"]`),
	} {
		f.Add([]byte(seed), false, false)
		f.Add([]byte(seed), true, true)
	}
	f.Fuzz(func(t *testing.T, b []byte, allowPrivate, update bool) {
		o, err := field.ParseJSON(b)
		if err != nil {
			return
		}
		opts := Options{AllowPrivate: allowPrivate}
		if update {
			opts.Current = stored(true)
		}
		req, err := ParseRequest(o, opts)
		if err != nil {
			var e *apierr.Error
			if !errors.As(err, &e) || e.Status != 400 || len(e.Fields) == 0 {
				t.Fatalf("error %v is not a 400 with validation errors", err)
			}
			return
		}
		if n := len([]rune(req.Name)); n < MinName || n > MaxName || req.Name != strings.TrimSpace(req.Name) {
			t.Fatalf("name %q", req.Name)
		}
		norm, port, problem := parseURL(req.URL)
		if problem != "" || norm != req.URL || port != 0 {
			t.Fatalf("url %q not normalized (%q, %d, %s)", req.URL, norm, port, problem)
		}
		if req.Port < 1 || req.Port > 65535 {
			t.Fatalf("port %d", req.Port)
		}
		if len([]rune(req.Username)) > MaxUsername || len([]rune(string(req.Password))) > MaxPassword ||
			strings.ContainsRune(req.Username, ':') || (req.Password != "" && req.Username == "") {
			t.Fatalf("credentials %q / %d characters", req.Username, len(req.Password))
		}
		if req.RetainPassword && (req.Password != "" || !update || retainProblem(opts.Current, req) != "") {
			t.Fatalf("retain_password accepted in %+v", req)
		}
		if req.BypassHosts == nil || len(req.BypassHosts) > MaxBypassHosts {
			t.Fatalf("bypass_hosts %q", req.BypassHosts)
		}
		seen := map[string]bool{}
		for _, h := range req.BypassHosts {
			again, problem := parseBypassHost(h)
			if problem != "" || again != h || seen[h] {
				t.Fatalf("bypass host %q: normalized %q (%s), seen %v", h, again, problem, seen[h])
			}
			seen[h] = true
		}
	})
}

// FuzzURL: an accepted url is scheme://host, lower-case, and reads back as
// itself; nothing accepted carries credentials, a path, a query or a
// fragment.
func FuzzURL(f *testing.F) {
	for _, s := range []string{
		"http://proxy.example.com", "HTTPS://Proxy.Example.COM:443/", "http://p.example:3128", "http://[2001:db8::1]:8080",
		"http://[fe80::1%25eth0]", "http://127.0.0.1", "http://0x7f000001", "http://1.2.3", "http://p.example.",
		"http://user:pw@p.example", "http://p.example/x", "http://p.example?", "http://p.example#", "http://p.example:",
		"http://p.example:65536", "http://p .example", "//p.example", "p.example", "http:p.example", "http://",
		"http://xn--bcher-kva.example", "http://bücher.example", "http://a..b", "http://-a.example", "http://p.example:0080",
		" http://p.example ", "http://p.example\\@evil.example", "http://[::1]x", "http://[::1", "http://a:b:c", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		norm, port, problem := parseURL(s)
		if problem != "" {
			if norm != "" || port != 0 {
				t.Fatalf("parseURL(%q) = %q, %d with problem %q", s, norm, port, problem)
			}
			return
		}
		if port < 0 || port > 65535 {
			t.Fatalf("parseURL(%q) port %d", s, port)
		}
		again, p2, problem := parseURL(norm)
		if problem != "" || again != norm || p2 != 0 {
			t.Fatalf("parseURL(%q) = %q, which reads back as %q, %d (%s)", s, norm, again, p2, problem)
		}
		u, err := url.Parse(norm)
		if err != nil {
			t.Fatalf("parseURL(%q) = %q, which net/url refuses: %v", s, norm, err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || u.Path != "" || u.RawQuery != "" ||
			u.Fragment != "" || u.ForceQuery || u.Opaque != "" || u.Port() != "" || u.Hostname() == "" {
			t.Fatalf("parseURL(%q) = %q: more or less than scheme://host (%#v)", s, norm, u)
		}
		if norm != strings.ToLower(norm) {
			t.Fatalf("parseURL(%q) = %q: not lower-case", s, norm)
		}
	})
}

// FuzzBypassHost: an accepted entry is its own normal form and matches
// itself (a wildcard, its subdomains).
func FuzzBypassHost(f *testing.F) {
	for _, s := range []string{
		"a.example", "A.Example.", "*.cdn.example", "*.", "*", "a.*.b", "[::1]", "::1", "[::1]:80", "fe80::1%eth0",
		"10.0.0.1", "10.0.0.0/8", "0x7f000001", "1.2.3", "http://a", "a:80", "bücher.example", "", " a ",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, problem := parseBypassHost(s)
		if problem != "" {
			if h != "" {
				t.Fatalf("parseBypassHost(%q) = %q with problem %q", s, h, problem)
			}
			return
		}
		if again, problem := parseBypassHost(h); problem != "" || again != h {
			t.Fatalf("parseBypassHost(%q) = %q, which reads back as %q (%s)", s, h, again, problem)
		}
		if strings.ContainsAny(h, "/:@ ") && !strings.Contains(h, "::") && strings.Count(h, ":") < 2 {
			t.Fatalf("parseBypassHost(%q) = %q", s, h)
		}
		p := &Proxy{BypassHosts: []string{h}}
		probe := h
		if rest, ok := strings.CutPrefix(h, "*."); ok {
			probe = "x." + rest
		}
		if !p.Bypasses(probe) {
			t.Fatalf("entry %q does not bypass %q", h, probe)
		}
	})
}
