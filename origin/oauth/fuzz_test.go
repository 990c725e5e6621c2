package oauth

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzRedirectURI: an accepted redirect URI has no fragment, no forbidden
// scheme, and http only on loopback; matching never accepts a URI of another
// origin than a registered one.
func FuzzRedirectURI(f *testing.F) {
	for _, s := range []string{
		"https://app.example/cb", "http://127.0.0.1:8080/cb", "http://[::1]/cb", "http://localhost/cb",
		"com.example.app:/cb", "javascript:alert(1)", "data:text/html,x", "http://evil.example/cb",
		"https://app.example/cb#x", "HTTP://127.0.0.1/cb", "http://127.0.0.1:0/cb", "http://127.0.0.1%2f@evil/cb",
	} {
		f.Add(s, "http://127.0.0.1:9999/callback")
	}
	f.Fuzz(func(t *testing.T, registered, given string) {
		if checkRedirectURI(registered) != nil {
			return
		}
		u, err := url.Parse(registered)
		if err != nil || strings.Contains(registered, "#") || forbiddenSchemes[u.Scheme] {
			t.Fatalf("accepted %q", registered)
		}
		if u.Scheme == "http" && !loopbackHost(u.Hostname()) {
			t.Fatalf("accepted http on %q", u.Hostname())
		}
		if !matchRedirect([]string{registered}, given) || given == registered {
			return
		}
		g, err := url.Parse(given)
		if err != nil || g.Scheme != "http" || g.Hostname() != u.Hostname() || g.EscapedPath() != u.EscapedPath() || g.RawQuery != u.RawQuery || strings.Contains(given, "#") {
			t.Fatalf("%q matched registered %q", given, registered)
		}
	})
}
