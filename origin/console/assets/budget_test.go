package assets

import (
	"bytes"
	"compress/gzip"
	"regexp"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/origin/console/assets/internal/bundle"
)

// TestBundleIsBuiltFromPinnedSources: the committed dist/ is exactly
// what origin/console/web's sources (and the npm packages its lockfile
// pins, installed by `make test-deps`) build with the pinned esbuild.
func TestBundleIsBuiltFromPinnedSources(t *testing.T) {
	files, err := bundle.Build(bundle.Config{WebDir: "../web"})
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	if err := bundle.Check("dist", files); err != nil {
		t.Fatal(err)
	}
	// And the embedded copy is that dist/: the binary serves what was checked.
	for logical := range paths {
		_, f := asset(t, logical)
		if want := files[strings.TrimPrefix(Path(logical), Prefix)]; !bytes.Equal(f.body, want) {
			t.Errorf("embedded %s is not what the sources build", logical)
		}
	}
}

// firstLoadBudget is the most compressed script and style a console
// page may load.
const firstLoadBudget = 300_000

func TestFirstLoadUnderBudget(t *testing.T) {
	var total int
	for _, logical := range required {
		_, f := asset(t, logical)
		var buf bytes.Buffer
		zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := zw.Write(f.body); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes, %d gzip -9", logical, len(f.body), buf.Len())
		total += buf.Len()
	}
	if total >= firstLoadBudget {
		t.Fatalf("first load is %d bytes of gzip -9 script and style, budget %d", total, firstLoadBudget)
	}
}

// evalLike matches code that compiles a string: the console's CSP has
// no 'unsafe-eval', so such code would fail in the browser.
var evalLike = regexp.MustCompile(`\beval\s*\(|[(,]\s*eval\s*\)|\bnew\s+Function\b|\bFunction\s*\(`)

func TestBundleHasNoEval(t *testing.T) {
	t.Run("the pattern", func(t *testing.T) {
		for s, want := range map[string]bool{
			`eval("1")`:               true,
			`x=eval (s)`:              true,
			`new Function("a","b")`:   true,
			`Function("return this")`: true,
			`(0,eval)(s)`:             true,
			`isFunction(x)`:           false,
			`medieval(x)`:             false,
			`typeof f=="function"`:    false,
		} {
			if got := evalLike.MatchString(s); got != want {
				t.Errorf("evalLike matches %q: %v, want %v", s, got, want)
			}
		}
	})
	for hashed, f := range files {
		if !strings.HasSuffix(hashed, ".js") {
			continue
		}
		t.Run(hashed, func(t *testing.T) {
			if loc := evalLike.FindIndex(f.body); loc != nil {
				from, to := max(loc[0]-40, 0), min(loc[1]+40, len(f.body))
				t.Fatalf("%s compiles a string at byte %d: …%s…", hashed, loc[0], f.body[from:to])
			}
		})
	}
}
