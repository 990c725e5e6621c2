package bundle

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// web writes a small npm project into a temporary directory.
func web(t *testing.T, js, css string) Config {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"src/console.js": js, "src/console.css": css} {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(name)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return Config{WebDir: dir}
}

func names(dir string, t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func TestBuildMinifiesAndHashes(t *testing.T) {
	cfg := web(t,
		"import { twice } from './lib.js';\nexport const answer = twice(21);\ndocument.title ??= String(answer);\n",
		"@import './base.css';\nbody {\n  color: red;\n}\n")
	for name, body := range map[string]string{
		"src/lib.js":   "export function twice(longArgumentName) { return longArgumentName * 2; }\n",
		"src/base.css": "html { margin: 0; }\n",
	} {
		if err := os.WriteFile(filepath.Join(cfg.WebDir, filepath.FromSlash(name)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	manifest := string(files[ManifestName])
	js := regexp.MustCompile(`"console.js": "(console-[0-9a-f]{10}\.js)"`).FindStringSubmatch(manifest)
	css := regexp.MustCompile(`"console.css": "(console-[0-9a-f]{10}\.css)"`).FindStringSubmatch(manifest)
	if js == nil || css == nil {
		t.Fatalf("manifest %s lacks a hashed console.js or console.css", manifest)
	}
	if got := slices.Sorted(func(yield func(string) bool) {
		for k := range files {
			if !yield(k) {
				return
			}
		}
	}); !slices.Equal(got, slices.Sorted(slices.Values([]string{css[1], js[1], ManifestName}))) {
		t.Fatalf("files %v, want %s, %s and the manifest", got, css[1], js[1])
	}
	if HashedName("console.js", files[js[1]]) != js[1] {
		t.Errorf("%s is not named by its contents' hash", js[1])
	}
	gotJS, gotCSS := string(files[js[1]]), string(files[css[1]])
	for _, want := range []string{"*2", "document.title"} {
		if !strings.Contains(gotJS, want) {
			t.Errorf("script %q lacks %q: the import was not bundled", gotJS, want)
		}
	}
	for _, absent := range []string{"longArgumentName", "import", "??=", "\n\n"} {
		if strings.Contains(gotJS, absent) {
			t.Errorf("script %q still has %q: not minified, bundled or lowered to ES2020", gotJS, absent)
		}
	}
	if !strings.Contains(gotCSS, "margin:0") || strings.Contains(gotCSS, "@import") || strings.Contains(gotCSS, "color: red") {
		t.Errorf("stylesheet %q: want the import inlined and minified", gotCSS)
	}
	if strings.Contains(gotJS, "sourceMappingURL") || strings.Contains(gotCSS, "sourceMappingURL") {
		t.Error("a source map is referenced")
	}
}

func TestBuildReportsErrors(t *testing.T) {
	tests := []struct {
		name    string
		js, css string
		wantErr string
	}{
		{name: "syntax", js: "let = ;\n", css: "body{}\n", wantErr: "src/console.js:1:"},
		{name: "missing import", js: "import 'nowhere-pkg';\n", css: "body{}\n", wantErr: "nowhere-pkg"},
		{name: "missing css import", js: "", css: "@import './gone.css';\n", wantErr: "gone.css"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(web(t, tc.js, tc.css))
			if !errors.Is(err, ErrBuild) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Build: %v, want ErrBuild naming %q", err, tc.wantErr)
			}
		})
	}
	if _, err := Build(Config{}); !errors.Is(err, ErrConfig) {
		t.Fatalf("Build(Config{}): %v, want ErrConfig", err)
	}
}

func TestWriteAndCheck(t *testing.T) {
	cfg := web(t, "document.title = 'one';\n", "body { color: blue; }\n")
	dist := filepath.Join(t.TempDir(), "dist")
	first, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(dist, first); !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "manifest.json is missing") {
		t.Fatalf("Check of an empty dist: %v, want ErrStale naming the missing manifest", err)
	}
	if err := Write(dist, first); err != nil {
		t.Fatal(err)
	}
	if err := Check(dist, first); err != nil {
		t.Fatalf("Check right after Write: %v", err)
	}

	// The script changes: the old script's name is stale, the new one missing.
	if err := os.WriteFile(filepath.Join(cfg.WebDir, "src", "console.js"), []byte("document.title = 'two';\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	second, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var oldJS, newJS string
	for name := range first {
		if strings.HasSuffix(name, ".js") {
			oldJS = name
		}
	}
	for name := range second {
		if strings.HasSuffix(name, ".js") {
			newJS = name
		}
	}
	if oldJS == newJS {
		t.Fatalf("a changed script kept its name %s", oldJS)
	}
	err = Check(dist, second)
	if !errors.Is(err, ErrStale) {
		t.Fatalf("Check after a source change: %v, want ErrStale", err)
	}
	for _, want := range []string{newJS + " is missing", "manifest.json differs", oldJS + " is stale", "make console-assets"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check: %v\nwant it to say %q", err, want)
		}
	}

	// A committed file edited by hand.
	var cssName string
	for name := range first {
		if strings.HasSuffix(name, ".css") {
			cssName = name
		}
	}
	if err := os.WriteFile(filepath.Join(dist, cssName), []byte("body{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Check(dist, first); err == nil || !strings.Contains(err.Error(), cssName+" differs") {
		t.Fatalf("Check after editing %s: %v, want it named", cssName, err)
	}

	// Write replaces the outputs and removes the stale ones.
	if err := Write(dist, second); err != nil {
		t.Fatal(err)
	}
	if err := Check(dist, second); err != nil {
		t.Fatalf("Check after the second Write: %v", err)
	}
	if got := names(dist, t); slices.Contains(got, oldJS) || len(got) != 3 {
		t.Fatalf("dist holds %v after Write, want only the second build's 3 files", got)
	}
}
