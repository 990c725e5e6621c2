package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/api"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*Config)
		field string // named in the error; "" for a valid config
	}{
		{"default", func(*Config) {}, ""},
		{"memory too small", func(c *Config) { c.MemoryLimitBytes = 1 << 20 }, "MemoryLimitBytes"},
		{"memory too large", func(c *Config) { c.MemoryLimitBytes = 8 << 30 }, "MemoryLimitBytes"},
		{"no timeout", func(c *Config) { c.Timeout = 0 }, "Timeout"},
		{"no template", func(c *Config) { c.MaxTemplateBytes = 0 }, "MaxTemplateBytes"},
		{"no values", func(c *Config) { c.MaxValuesBytes = -1 }, "MaxValuesBytes"},
		{"no output", func(c *Config) { c.MaxOutputBytes = 0 }, "MaxOutputBytes"},
		{"depth", func(c *Config) { c.MaxDepth = 0 }, "MaxDepth"},
		{"pool", func(c *Config) { c.PoolSize = -1 }, "PoolSize"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tt.edit(&cfg)
			err := cfg.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("Validate = %v, want an error naming %s", err, tt.field)
			}
			if _, err := New(context.Background(), cfg); err == nil {
				t.Fatal("New accepted an invalid config")
			}
		})
	}
}

func TestCheck(t *testing.T) {
	e := sharedEngine(t)
	tests := []struct {
		name         string
		template     string
		line, column int // of the *SyntaxError; 0 for a valid template
	}{
		{"valid", "Hello {{name}}{{#each a}}{{this}}{{/each}}", 0, 0},
		{"empty", "", 0, 0},
		{"unclosed block", "<p>\n  {{#if a}}x\n</p>", 3, 5},
		{"mismatched close", "{{#if a}}\n  x\n  {{/each}}", 3, 6},
		{"empty mustache", "ab {{}}", 1, 6},
		{"unclosed comment", "line\n{{!-- no end", 2, 1},
		{"bad close", "é {{foo}}}", 1, 8},
		{"invalid path", "{{a}}\n{{foo.this}}", 2, 7},
		{"same token twice", "{{a}}{{b}}{{#if}}{{/if}}{{#if}", 1, 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := e.Check(context.Background(), tt.template)
			if tt.line == 0 {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Check = %v, want a *SyntaxError", err)
			}
			if se.Line != tt.line || se.Column != tt.column || se.Message == "" {
				t.Fatalf("Check = %+v, want line %d column %d", se, tt.line, tt.column)
			}
		})
	}
}

func TestRender(t *testing.T) {
	e := sharedEngine(t)
	tests := []struct {
		name     string
		template string
		values   string
		want     string
		err      error
	}{
		{"variables", "<h1>{{title}}</h1>{{{html}}}", `{"title":"A & B","html":"<i>x</i>"}`, "<h1>A &amp; B</h1><i>x</i>", nil},
		{"nested", "{{#each users}}{{name.first}}:{{#each roles}}{{this}}{{#unless @last}},{{/unless}}{{/each}};{{/each}}",
			`{"users":[{"name":{"first":"a"},"roles":["x","y"]},{"name":{"first":"b"},"roles":[]}]}`, "a:x,y;b:;", nil},
		{"no values", "[{{x}}]", "", "[]", nil},
		{"whitespace values", "[{{x}}]", " \n ", "[]", nil},
		{"array values", "x", `[1]`, "", ErrValues},
		{"string values", "x", `"s"`, "", ErrValues},
		{"null values", "x", `null`, "", ErrValues},
		{"invalid json", "x", `{"a":}`, "", ErrValues},
		{"trailing garbage", "x", `{} {}`, "", ErrValues},
		{"missing helper", "{{shout name}}", `{"name":"x"}`, "", ErrRender},
		{"partial", "{{> header}}", `{}`, "", ErrRender},
		{"if without argument", "{{#if}}x{{/if}}", `{}`, "", ErrRender},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e.Render(context.Background(), tt.template, []byte(tt.values))
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("Render = %q, %v; want %v", got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Render = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	var se *SyntaxError
	if _, err := e.Render(context.Background(), "{{#if a}}", nil); !errors.As(err, &se) {
		t.Fatalf("Render of an invalid template = %v, want a *SyntaxError", err)
	}
}

// nest returns open^n + body + close^n.
func nest(open, body, close string, n int) string {
	return strings.Repeat(open, n) + body + strings.Repeat(close, n)
}

// TestHostileTemplates runs templates and values written to hurt: each
// must fail with its error, within the limits, and the engine must
// render normally right after.
func TestHostileTemplates(t *testing.T) {
	hundred := "[" + strings.TrimSuffix(strings.Repeat("0,", 100), ",") + "]"
	tests := []struct {
		name     string
		edit     func(*Config)
		template string
		values   string
		err      error
		// the host rejects the values before any guest sees them
		badValues bool
	}{
		{
			// 100^6 iterations with no output: only the deadline stops it.
			name:     "loop: nested each",
			edit:     func(c *Config) { c.Timeout = 300 * time.Millisecond },
			template: nest("{{#each @root.a}}", "{{! nothing }}", "{{/each}}", 6),
			values:   `{"a":` + hundred + `}`,
			err:      ErrTimeout,
		},
		{
			name:     "giant output: nested each",
			edit:     func(c *Config) { c.MaxOutputBytes = 256 << 10 },
			template: nest("{{#each @root.a}}", "{{@root.s}}", "{{/each}}", 4),
			values:   `{"a":` + hundred + `,"s":"` + strings.Repeat("x", 100) + `"}`,
			err:      ErrOutputTooLarge,
		},
		{
			// With an output limit above the memory limit, the guest's
			// memory runs out first.
			name: "unbounded allocation",
			edit: func(c *Config) {
				c.MemoryLimitBytes = 16 << 20
				c.MaxOutputBytes = 1 << 30
			},
			template: nest("{{#each @root.a}}", "{{@root.s}}", "{{/each}}", 4),
			values:   `{"a":` + hundred + `,"s":"` + strings.Repeat("x", 100) + `"}`,
			err:      ErrMemory,
		},
		{
			name:     "deep blocks",
			template: nest("{{#if a}}", "x", "{{/if}}", 20000),
			values:   `{"a":1}`,
			err:      ErrTooDeep,
		},
		{
			name:     "deep else-if chain",
			template: "{{#if a}}" + strings.Repeat("{{else if a}}", 20000) + "{{/if}}",
			err:      ErrTooDeep,
		},
		{
			name:     "deep subexpressions",
			template: "{{lookup " + nest("(lookup ", "a", " 0)", 20000) + " 0}}",
			err:      ErrTooDeep,
		},
		{
			name:     "deep sections",
			template: nest("{{#a}}", "{{.}}", "{{/a}}", 100),
			values:   `{"a":{"a":1}}`,
			err:      ErrTooDeep,
		},
		{
			name:      "deep values",
			template:  "{{a}}",
			values:    `{"a":` + nest("[", "1", "]", 200000) + `}`,
			err:       ErrTooDeep,
			badValues: true,
		},
		{
			name:      "huge values",
			template:  "{{a}}",
			values:    `{"a":"` + strings.Repeat("x", 2<<20) + `"}`,
			err:       ErrValuesTooLarge,
			badValues: true,
		},
		{
			name:     "large values, amplified",
			template: nest("{{#each @root.a}}", "{{@root.s}}", "{{/each}}", 1),
			values:   `{"a":` + hundred + `,"s":"` + strings.Repeat("<", 100<<10) + `"}`,
			err:      ErrOutputTooLarge,
		},
		{
			name:     "huge template",
			template: strings.Repeat("{{a}}", 200<<10),
			err:      ErrTemplateTooLarge,
		},
		{
			name:      "values not an object",
			template:  "{{this}}",
			values:    strings.Repeat("[", 1000),
			err:       ErrValues,
			badValues: true,
		},
	}
	// Each case twice: parsed by the Go guest (no program cache), and
	// checked first (as the API does when a template is saved) so that
	// the render is the evaluator's, of the cached program. The cases with
	// the default limits share an engine of each kind, one after the other,
	// as an origin's renders do (an engine's start took a second under the
	// race detector); a case that changes a limit has an engine of its own.
	noCache := func(c *Config) { c.ProgramCacheBytes = 0 }
	defaults := map[bool]*Engine{false: newEngine(t, noCache), true: newEngine(t, nil)}
	for _, tt := range tests {
		for _, cached := range []bool{false, true} {
			name := tt.name + "/go-guest"
			if cached {
				name = tt.name + "/evaluator"
			}
			t.Run(name, func(t *testing.T) {
				e := defaults[cached]
				if tt.edit != nil {
					e = newEngine(t, func(c *Config) {
						tt.edit(c)
						if !cached {
							noCache(c)
						}
					})
				}
				ctx := context.Background()
				before := e.Stats()
				checked := cached && e.Check(ctx, tt.template) == nil
				start := time.Now()
				got, err := e.Render(ctx, tt.template, []byte(tt.values))
				if !errors.Is(err, tt.err) {
					t.Fatalf("Render = %.40q…, %v; want %v", got, err, tt.err)
				}
				t.Logf("%v after %s", err, time.Since(start).Round(time.Millisecond))
				st := e.Stats()
				n := st.Evaluated - before.Evaluated + st.HandedBack - before.HandedBack
				if want := checked && !tt.badValues; want != (n == 1) {
					t.Errorf("evaluations of a cached program: %d, want one: %v", n, want)
				}
				if out, err := e.Render(ctx, "Hello {{name}}", []byte(`{"name":"world"}`)); err != nil || out != "Hello world" {
					t.Fatalf("render after the hostile one = %q, %v", out, err)
				}
			})
		}
	}
}

func TestCanceledContext(t *testing.T) {
	e := sharedEngine(t)
	// The caller gives up while the guest loops (10^12 iterations: it
	// never finishes on its own).
	ctx, cancel := context.WithCancel(context.Background())
	stop := time.AfterFunc(50*time.Millisecond, cancel)
	defer stop.Stop()
	hundred := "[" + strings.TrimSuffix(strings.Repeat("0,", 100), ",") + "]"
	_, err := e.Render(ctx, nest("{{#each @root.a}}", "", "{{/each}}", 6), []byte(`{"a":`+hundred+`}`))
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
		t.Fatalf("Render = %v, want context.Canceled", err)
	}
}

// TestFreshInstances: what one evaluation leaves in the guest's memory
// is not in the next instance's.
func TestFreshInstances(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.PoolSize = 0 })
	ctx := context.Background()
	secret := "s3cr3t-" + strings.Repeat("k", 20)
	if out, err := e.Render(ctx, "{{a}}{{a}}", []byte(`{"a":"`+secret+`"}`)); err != nil || out != secret+secret {
		t.Fatalf("Render = %q, %v", out, err)
	}
	inst, err := e.instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer inst.close()
	g, err := e.goGuest(ctx, inst)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []api.Memory{g.mod.Memory(), inst.ev.mod.Memory()} {
		if mem, _ := m.Read(0, m.Size()); bytes.Contains(mem, []byte("s3cr3t-")) {
			t.Fatal("a new instance's memory holds the previous evaluation's values")
		}
	}
}

func TestConcurrentRenders(t *testing.T) {
	e := sharedEngine(t)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				want := fmt.Sprintf("%d-%d", g, i)
				got, err := e.Render(context.Background(), "{{g}}-{{i}}", []byte(fmt.Sprintf(`{"g":%d,"i":%d}`, g, i)))
				if err != nil || got != want {
					errs <- fmt.Errorf("Render = %q, %v; want %q", got, err, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestClose(t *testing.T) {
	e, err := New(context.Background(), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := e.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := e.Render(context.Background(), "x", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Render after Close = %v, want ErrClosed", err)
	}
}

// TestCompilationCacheDir: an engine keeps what it compiles in
// Config.CompilationCacheDir. Compiling the 3.8 MB guest from nothing
// takes 15-50 s of CPU under -race, so the directory starts as a copy of
// the shared test cache less its small entries (the 26 KB evaluator's,
// about 150 KB compiled): the engine loads the guest from the copy and
// must write the evaluator's entry back.
func TestCompilationCacheDir(t *testing.T) {
	sharedEngine(t) // the shared cache holds both modules
	dir := t.TempDir()
	for rel, b := range cacheEntries(t, testCacheDir) {
		if len(b) < 1<<20 {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	newEngine(t, func(c *Config) { c.CompilationCacheDir = dir })
	var small []string
	for rel, b := range cacheEntries(t, dir) {
		if len(b) < 1<<20 {
			small = append(small, rel)
		}
	}
	if len(small) != 1 {
		t.Fatalf("after New, %s holds %d small entries %q, want the evaluator's", dir, len(small), small)
	}
}

// cacheEntries reads the files of a compilation cache by their paths
// under root, less those another test is writing (wazero writes a
// temporary file and renames it).
func cacheEntries(t *testing.T, root string) map[string][]byte {
	t.Helper()
	entries := map[string][]byte{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".tmp") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		entries[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return entries
}
