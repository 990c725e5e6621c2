package bundle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

// ManifestName is the manifest's file name in the output directory: a
// JSON object from each entry's logical name to its hashed file name.
const ManifestName = "manifest.json"

// hashLen is how many hex digits of the content's SHA-256 a hashed name
// carries.
const hashLen = 10

// Entry is one bundle: the logical name pages ask for and its source,
// relative to Config.WebDir.
type Entry struct {
	Name   string
	Source string
}

// Entries are the console's bundles.
var Entries = []Entry{
	{Name: "console.js", Source: "src/console.js"},
	{Name: "console.css", Source: "src/console.css"},
}

// Config says where the sources are.
type Config struct {
	// WebDir is the npm project of the console's web sources: its src/
	// holds the entries and its node_modules (from `npm ci`) whatever
	// they import.
	WebDir string
}

// DefaultConfig returns the configuration for the repository root as
// working directory.
func DefaultConfig() Config {
	return Config{WebDir: filepath.FromSlash("origin/console/web")}
}

// Validate checks that WebDir is set.
func (c Config) Validate() error {
	if c.WebDir == "" {
		return fmt.Errorf("%w: WebDir is empty", ErrConfig)
	}
	return nil
}

// Files is a built output directory: file name to contents, the
// manifest included.
type Files map[string][]byte

// Build bundles every entry (minified, target ES2020, no source maps,
// legal comments kept at the end) and returns the hashed files and the
// manifest. It writes nothing.
func Build(cfg Config) (Files, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	webDir, err := filepath.Abs(cfg.WebDir)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", cfg.WebDir, err)
	}
	files := Files{}
	manifest := map[string]string{}
	for _, e := range Entries {
		body, err := buildEntry(webDir, e)
		if err != nil {
			return nil, err
		}
		name := HashedName(e.Name, body)
		files[name] = body
		manifest[e.Name] = name
	}
	m, err := json.MarshalIndent(manifest, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	files[ManifestName] = append(m, '\n')
	return files, nil
}

// HashedName returns name with the first hex digits of body's SHA-256
// before its extension: console.js → console-0123456789.js.
func HashedName(name string, body []byte) string {
	sum := sha256.Sum256(body)
	ext := filepath.Ext(name)
	return strings.TrimSuffix(name, ext) + "-" + hex.EncodeToString(sum[:])[:hashLen] + ext
}

func buildEntry(webDir string, e Entry) ([]byte, error) {
	opts := api.BuildOptions{
		EntryPoints:       []string{filepath.Join(webDir, filepath.FromSlash(e.Source))},
		AbsWorkingDir:     webDir,
		Outdir:            filepath.Join(webDir, "out"), // never written: Write is false
		Bundle:            true,
		Write:             false,
		MinifyWhitespace:  true,
		MinifyIdentifiers: true,
		MinifySyntax:      true,
		Target:            api.ES2020,
		Platform:          api.PlatformBrowser,
		Sourcemap:         api.SourceMapNone,
		LegalComments:     api.LegalCommentsEndOfFile,
		LogLevel:          api.LogLevelSilent,
	}
	if strings.HasSuffix(e.Name, ".js") {
		opts.Format = api.FormatESModule
	}
	res := api.Build(opts)
	if len(res.Errors) > 0 {
		msgs := make([]string, 0, len(res.Errors))
		for _, m := range res.Errors {
			msgs = append(msgs, formatMessage(webDir, m))
		}
		return nil, fmt.Errorf("%w: %s: %s", ErrBuild, e.Source, strings.Join(msgs, "; "))
	}
	if len(res.OutputFiles) != 1 {
		names := make([]string, 0, len(res.OutputFiles))
		for _, f := range res.OutputFiles {
			names = append(names, filepath.Base(f.Path))
		}
		return nil, fmt.Errorf("%w: %s built into %d files (%s), want one", ErrBuild, e.Source, len(res.OutputFiles), strings.Join(names, ", "))
	}
	return res.OutputFiles[0].Contents, nil
}

func formatMessage(webDir string, m api.Message) string {
	if m.Location == nil {
		return m.Text
	}
	file := m.Location.File
	if rel, err := filepath.Rel(webDir, file); err == nil && !strings.HasPrefix(rel, "..") {
		file = rel
	}
	return fmt.Sprintf("%s:%d:%d: %s", file, m.Location.Line, m.Location.Column, m.Text)
}

// Write makes dir hold exactly files: it writes each and removes every
// other regular file there (the outputs of earlier sources).
func Write(dir string, files Files) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	for _, name := range sortedNames(files) {
		path := filepath.Join(dir, name)
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, files[name]) {
			continue
		}
		if err := os.WriteFile(path, files[name], 0o644); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	for _, de := range entries {
		if _, keep := files[de.Name()]; keep || !de.Type().IsRegular() {
			continue
		}
		if err := os.Remove(filepath.Join(dir, de.Name())); err != nil {
			return fmt.Errorf("remove stale %s: %w", de.Name(), err)
		}
	}
	return nil
}

// Check compares dir with files and returns an error wrapping ErrStale
// that names every file missing from dir, differing, or left over.
func Check(dir string, files Files) error {
	var problems []string
	for _, name := range sortedNames(files) {
		got, err := os.ReadFile(filepath.Join(dir, name))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			problems = append(problems, name+" is missing")
		case err != nil:
			return fmt.Errorf("read %s: %w", name, err)
		case !bytes.Equal(got, files[name]):
			problems = append(problems, name+" differs from what the sources build")
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	for _, de := range entries {
		if _, want := files[de.Name()]; !want {
			problems = append(problems, de.Name()+" is stale (no source builds it)")
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w in %s: %s; run `make console-assets` and commit the result", ErrStale, dir, strings.Join(problems, "; "))
	}
	return nil
}

func sortedNames(files Files) []string {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
