package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/pictorhq/pictor/wasm/internal/hbs"
)

// corpusCase is one entry of testdata/corpus.json. Values is JSON text
// (a string, so that key order, repeated keys and number spellings reach
// both engines as written).
type corpusCase struct {
	Name     string `json:"name"`
	Template string `json:"template"`
	Values   string `json:"values"`
}

// jsResult is what testdata/handlebarsjs/render.js says of a case.
type jsResult struct {
	Invalid bool    `json:"invalid"`
	Message string  `json:"message"`
	Error   *string `json:"error"`
	Output  *string `json:"output"`
}

const handlebarsDir = "testdata/handlebarsjs"

// renderWithHandlebarsJS renders every case with handlebars.js (the
// version pinned in testdata/handlebarsjs/package-lock.json) in one node
// process.
func renderWithHandlebarsJS(t *testing.T, cases []corpusCase) []jsResult {
	t.Helper()
	if _, err := os.Stat(filepath.Join(handlebarsDir, "node_modules", "handlebars", "package.json")); err != nil {
		msg := "handlebars.js is not installed: run `npm ci` in wasm/testdata/handlebarsjs (make test-deps does)"
		if testing.Short() {
			t.Skip(msg)
		}
		t.Fatal(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: the differential test runs handlebars.js with it (make test-deps installs it)")
	}
	in := make([]map[string]string, len(cases))
	for i, c := range cases {
		in[i] = map[string]string{"template": c.Template, "values": c.Values}
	}
	stdin, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join(handlebarsDir, "render.js"))
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node render.js: %v\n%s", err, stderr.String())
	}
	var res []jsResult
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(cases) {
		t.Fatalf("node render.js answered %d results for %d cases (%v)", len(res), len(cases), err)
	}
	return res
}

// handedBack are the corpus cases handlebars.js renders that the
// evaluator (wasm/evaluator) hands to the Go guest, and why.
var handedBack = map[string]string{
	"path/length":                 "the length of a non-ASCII string (UTF-16 units)",
	"each/primitive-parent-depth": "a number compared with an array (JavaScript's == through ToNumber)",
}

// TestCorpusMatchesHandlebarsJS renders testdata/corpus.json with
// handlebars.js and with the sandbox: outputs must be byte-identical,
// and the same templates must be rejected as invalid, and the same fail
// while rendering. The native engine (package hbs called in-process)
// must agree with the sandbox too. Each template is checked first (as
// the API does when it is saved), so its render is of the cached
// program: by the evaluator, which must render every case but those of
// handedBack, and hand back every case handlebars.js throws on.
func TestCorpusMatchesHandlebarsJS(t *testing.T) {
	raw, err := os.ReadFile("testdata/corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []corpusCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 100 {
		t.Fatalf("corpus has %d cases, want at least 100", len(cases))
	}
	want := renderWithHandlebarsJS(t, cases)
	e := newEngine(t, nil)
	ctx := context.Background()
	seen := map[string]bool{}
	for i, c := range cases {
		if seen[c.Name] {
			t.Fatalf("corpus: case %q twice", c.Name)
		}
		seen[c.Name] = true
		js := want[i]
		t.Run(c.Name, func(t *testing.T) {
			checkErr := e.Check(ctx, c.Template)
			var se *SyntaxError
			switch {
			case js.Invalid && !errors.As(checkErr, &se):
				t.Fatalf("Check = %v; handlebars.js rejects the template: %s", checkErr, js.Message)
			case js.Invalid:
				if se.Line < 1 || se.Column < 1 {
					t.Errorf("syntax error without a position: %+v", se)
				}
				return
			case checkErr != nil:
				t.Fatalf("Check = %v; handlebars.js accepts the template", checkErr)
			}
			before := e.Stats()
			got, err := e.Render(ctx, c.Template, []byte(c.Values))
			after := e.Stats()
			fast, back := after.Evaluated-before.Evaluated, after.HandedBack-before.HandedBack
			_, known := handedBack[c.Name]
			switch {
			case fast+back != 1:
				t.Errorf("the render was not of the cached program (evaluated %d, handed back %d)", fast, back)
			case js.Error != nil && back != 1:
				t.Errorf("the evaluator rendered a case handlebars.js throws on")
			case js.Error == nil && known != (back == 1):
				t.Errorf("handed back to the Go guest: %v; listed in handedBack: %v", back == 1, known)
			}
			if js.Error != nil {
				if !errors.Is(err, ErrRender) {
					t.Fatalf("Render = %q, %v; handlebars.js throws %q", got, err, *js.Error)
				}
			} else if err != nil {
				t.Fatalf("Render: %v; handlebars.js renders %q", err, *js.Output)
			} else if got != *js.Output {
				t.Fatalf("Render differs from handlebars.js\n got: %q\nwant: %q", got, *js.Output)
			}
			native, nerr := renderNative(c.Template, []byte(c.Values), DefaultConfig())
			if native != got || (nerr == nil) != (err == nil) {
				t.Errorf("native engine: %q, %v; sandbox: %q, %v", native, nerr, got, err)
			}
		})
	}
}

// renderNative is the same engine (package hbs) called in-process, for
// comparison with the sandbox.
func renderNative(template string, values []byte, cfg Config) (string, error) {
	tpl, err := hbs.Parse(template, cfg.MaxDepth)
	if err != nil {
		return "", err
	}
	v, err := hbs.ParseValues(values, cfg.MaxDepth)
	if err != nil {
		return "", err
	}
	return tpl.Render(v, cfg.MaxOutputBytes)
}
