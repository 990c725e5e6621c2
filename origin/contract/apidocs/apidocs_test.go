package apidocs

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/precompress"
)

// TestBundleIsThePinnedRelease: the committed bundle is RedocVersion's
// (Redoc prints its version on its error screen: the constant is in the
// bundle), fetched with its licenses and patched as fetch-redoc.sh does.
func TestBundleIsThePinnedRelease(t *testing.T) {
	m := regexp.MustCompile(`" ReDoc Version: ","([^"]+)"`).FindAllSubmatch(script, -1)
	if len(m) != 1 {
		t.Fatalf("the bundle states its version %d times, want once: not a Redoc standalone bundle, or its format changed", len(m))
	}
	if got := string(m[0][1]); got != RedocVersion {
		t.Fatalf("the committed bundle is Redoc %s, RedocVersion pins %s: run `make apidocs`", got, RedocVersion)
	}
	if !bytes.HasPrefix(script, []byte("/*! For license information please see redoc.standalone.js.LICENSE.txt */")) {
		t.Errorf("the bundle does not start with its license notice: %.80q", script)
	}
	if !strings.HasSuffix(NoticesPath, "/redoc.standalone.js.LICENSE.txt") || len(notices) == 0 {
		t.Errorf("the bundled code's licenses are not served where the bundle says (%s, %d bytes)", NoticesPath, len(notices))
	}
	if !bytes.Contains(license, []byte("MIT License")) {
		t.Errorf("redoc/LICENSE is not Redoc's MIT license: %.80q", license)
	}
	if bytes.Contains(script, []byte("cdn.redoc.ly")) {
		t.Error("the bundle still loads Redocly's logo from its CDN: fetch-redoc.sh's patch is missing")
	}
	if !regexp.MustCompile(`^sha512-[A-Za-z0-9+/]{86}==$`).MatchString(RedocIntegrity) {
		t.Errorf("RedocIntegrity %q is not an npm sha512 integrity", RedocIntegrity)
	}
}

// TestPage: the page loads the versioned bundle and its stylesheet from the
// edge, renders /v1/openapi.json, and has nothing the CSP would refuse (no
// inline script or style, no other host).
func TestPage(t *testing.T) {
	html := string(page)
	for _, want := range []string{
		`<script src="` + ScriptPath + `"></script>`,
		`<link rel="stylesheet" href="` + StylePath + `">`,
		`<redoc spec-url="/v1/openapi.json">`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("index.html lacks %s", want)
		}
	}
	for _, bad := range []string{"<script>", "<style", " style=", "http://", "https://", `"//`} {
		if strings.Contains(html, bad) {
			t.Errorf("index.html holds %q, which the page's CSP refuses or which reaches another host", bad)
		}
	}
	if h := regexp.MustCompile(`\son[a-z]+=`).FindString(html); h != "" {
		t.Errorf("index.html has an inline event handler (%s), which the page's CSP refuses", h)
	}
}

func TestFiles(t *testing.T) {
	strong := regexp.MustCompile(`^"[0-9a-f]{32}"$`)
	seen := map[string]bool{}
	var pages int
	for _, f := range Files() {
		t.Run(f.Path, func(t *testing.T) {
			if seen[f.Path] {
				t.Fatal("served twice")
			}
			seen[f.Path] = true
			if !strings.HasPrefix(f.Path, PagePath) || len(f.Body) == 0 || f.ContentType == "" || f.CacheControl == "" {
				t.Fatalf("incomplete: %+v", File{Path: f.Path, ContentType: f.ContentType, CacheControl: f.CacheControl})
			}
			if !strong.MatchString(f.ETag) || f.ETag != etag(f.Body) {
				t.Errorf("ETag %s is not the strong hash of the body", f.ETag)
			}
			if strings.Contains(f.CacheControl, "immutable") != (f.Path == ScriptPath) {
				t.Errorf("Cache-Control %q: only the versioned bundle is immutable", f.CacheControl)
			}
			if f.Page {
				pages++
				if !bytes.Equal(f.Body, page) || !strings.HasPrefix(f.ContentType, "text/html") {
					t.Errorf("page file is not index.html as HTML")
				}
			}
		})
	}
	if pages != 2 || !seen[PagePath] || !seen[PagePath+"/"] {
		t.Fatalf("the page is served at %d paths, want %s and %s/", pages, PagePath, PagePath)
	}
	if f := Files(); &f[0].Body[0] != &Files()[0].Body[0] {
		t.Error("Files copies the bodies")
	}
}

// TestPolicy: the CSP allows nothing from another host and no inline
// script, and refuses framing.
func TestPolicy(t *testing.T) {
	directives := map[string]string{}
	for _, d := range strings.Split(ContentSecurityPolicy, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		if _, dup := directives[name]; dup {
			t.Fatalf("directive %s twice", name)
		}
		directives[name] = value
	}
	for name, want := range map[string]string{
		"default-src": "'none'", "script-src": "'self'", "connect-src": "'self'", "img-src": "'self' data:",
		"worker-src": "blob:", "base-uri": "'none'", "form-action": "'none'", "frame-ancestors": "'none'",
	} {
		if got := directives[name]; got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if s := directives["style-src"]; !strings.HasPrefix(s, "'self' 'sha256-") || strings.Contains(s, "unsafe") {
		t.Errorf("style-src = %q, want 'self' and hashes", s)
	}
	if strings.Contains(ContentSecurityPolicy, "unsafe-") || strings.Contains(ContentSecurityPolicy, "http") || strings.Contains(ContentSecurityPolicy, "*") {
		t.Errorf("the policy allows more than the edge itself: %s", ContentSecurityPolicy)
	}
}

// TestPrecompressed: every file of 1 KiB or more has its .br and .gz forms,
// and they are what the committed sources give (fetch-redoc.sh makes them;
// `go run ./origin/contract/precompress/write FILE` remakes one).
func TestPrecompressed(t *testing.T) {
	for _, f := range Files() {
		t.Run(f.Path, func(t *testing.T) {
			if len(f.Body) < 1<<10 {
				if f.Brotli != nil || f.Gzip != nil {
					t.Fatal("a file under 1 KiB has compressed forms")
				}
				return
			}
			if err := precompress.Check(f.Body, f.Brotli, f.Gzip); err != nil {
				t.Fatalf("%v: run `make apidocs`, or go run ./origin/contract/precompress/write on the file", err)
			}
		})
	}
}
