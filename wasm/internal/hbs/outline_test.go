package hbs

import (
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestOutline: helper calls of helpers the runtime lacks, wherever they
// stand, with their position; the names read from the root context.
func TestOutline(t *testing.T) {
	tests := []struct {
		name      string
		src       string
		unknown   []HelperCall
		variables []string
		wholeRoot bool
	}{
		{name: "plain variables", src: "<p>{{title}}</p>{{{raw}}}{{& amp}}", variables: []string{"amp", "raw", "title"}},
		{name: "dotted and scoped paths", src: "{{author.name}} {{this.a.b}} {{./c}} {{[d e].f}}", variables: []string{"a", "author", "c", "d e"}},
		{name: "a helper with a parameter", src: "x\n\n  {{upper title}}", unknown: []HelperCall{{"upper", 3, 5}}, variables: []string{"title"}},
		{name: "a block helper", src: "{{#repeat 3}}x{{/repeat}}", unknown: []HelperCall{{"repeat", 1, 4}}},
		{name: "a helper with a string", src: `{{formatDate date "YYYY"}}`, unknown: []HelperCall{{"formatDate", 1, 3}}, variables: []string{"date"}},
		{name: "a hash only", src: "{{badge size=2}}", unknown: []HelperCall{{"badge", 1, 3}}},
		{name: "a subexpression", src: "{{#if (isEven n)}}e{{/if}}", unknown: []HelperCall{{"isEven", 1, 8}}, variables: []string{"n"}},
		{name: "a subexpression without arguments", src: "{{lookup a (key)}}", unknown: []HelperCall{{"key", 1, 13}}, variables: []string{"a"}},
		{name: "helper and subexpression both unknown", src: "{{foo (bar x)}}", unknown: []HelperCall{{"foo", 1, 3}, {"bar", 1, 8}}, variables: []string{"x"}},
		{name: "in an unrendered branch", src: "{{#if a}}{{else}}\n{{shout b}}{{/if}}", unknown: []HelperCall{{"shout", 2, 3}}, variables: []string{"a", "b"}},
		{name: "inside an unknown block", src: "{{#wrap x}}{{inner y}}{{/wrap}}", unknown: []HelperCall{{"wrap", 1, 4}, {"inner", 1, 14}}, variables: []string{"x"}},
		{name: "a dotted helper", src: "{{person.format x}}", unknown: []HelperCall{{"person.format", 1, 3}}, variables: []string{"x"}},
		{name: "a literal helper name", src: `{{"shout" x}}`, unknown: []HelperCall{{"shout", 1, 3}}, variables: []string{"x"}},
		{name: "columns count characters", src: "é€{{up x}}", unknown: []HelperCall{{"up", 1, 5}}, variables: []string{"x"}},
		{name: "in a dynamic partial's name", src: "{{> (pick x) }}", unknown: []HelperCall{{"pick", 1, 6}}, variables: []string{"x"}},
		{name: "built-in helpers", src: "{{#if a}}{{lookup b c}}{{log d}}{{/if}}{{#unless e}}u{{/unless}}{{#with f}}{{g}}{{/with}}{{#each h}}{{i}}{{/each}}",
			variables: []string{"a", "b", "c", "d", "e", "f", "h"}},
		{name: "built-ins without arguments", src: "{{log}}{{lookup}}{{#if}}x{{/if}}"},
		{name: "explicit missing helpers", src: "{{helperMissing}}{{#blockHelperMissing s}}{{t}}{{/blockHelperMissing}}", variables: []string{"s", "t"}},
		{name: "a block parameter called with arguments", src: "{{#each xs as |fmt|}}{{fmt 1}}{{/each}}", variables: []string{"xs"}},
		// The runtime calls fmt.a as a helper: its value is not a function.
		{name: "a block parameter's property called", src: "{{#each xs as |fmt|}}{{fmt.a b}}{{/each}}", unknown: []HelperCall{{"fmt.a", 1, 24}}, variables: []string{"xs"}},
		{name: "a block parameter shadows a name", src: "{{#if a as |b|}}{{b}}{{b.c}}{{/if}}", variables: []string{"a"}},
		{name: "a block parameter out of scope", src: "{{#each xs as |fmt|}}{{/each}}{{fmt 1}}", unknown: []HelperCall{{"fmt", 1, 33}}, variables: []string{"xs"}},
		{name: "each and with bodies are another context", src: "{{#each items}}{{title}}{{../brand}}{{@root.site}}{{@index}}{{else}}{{empty}}{{/each}}",
			variables: []string{"brand", "empty", "items", "site"}},
		{name: "nested contexts", src: "{{#with a}}{{#each b}}{{../c}}{{../../d}}{{/each}}{{/with}}", variables: []string{"a", "d"}},
		{name: "../ at the root is nothing", src: "{{../x}}{{#if a}}{{../y}}{{/if}}", variables: []string{"a"}},
		{name: "a section's body may be the root context", src: "{{#show}}{{badge}}{{../up}}{{else}}{{none}}{{/show}}{{^hide}}{{shown}}{{/hide}}",
			variables: []string{"badge", "hide", "none", "show", "shown", "up"}},
		{name: "literals are not variables", src: "{{#if null}}{{/if}}{{lookup undefined true}}{{lookup a 1}}", variables: []string{"a"}},
		{name: "data", src: "{{@index}}{{@root}}{{@root.x.y}}", variables: []string{"x"}},
		{name: "this printed", src: "{{this}}{{.}}"},
		{name: "each over the root", src: "{{#each this}}{{@key}}{{/each}}", wholeRoot: true},
		{name: "lookup in the root", src: `{{lookup . "x"}}`, wholeRoot: true},
		{name: "with @root", src: "{{#each a}}{{#with @root}}{{b}}{{/with}}{{/each}}", variables: []string{"a"}, wholeRoot: true},
		{name: "with ../this", src: "{{#each a}}{{#with ../this}}{{b}}{{/with}}{{/each}}", variables: []string{"a"}, wholeRoot: true},
		{name: "a section on the root", src: "{{#.}}{{x}}{{/.}}", variables: []string{"x"}, wholeRoot: true},
		{name: "hash values", src: "{{#each xs key=k}}{{/each}}", variables: []string{"k", "xs"}},
		{name: "partial parameters are not read", src: "{{> card x}}"},
		{name: "comments and raw blocks", src: "{{! {{upper x}} }}{{{{raw}}}}{{upper y}}{{{{/raw}}}}", variables: []string{"raw"}},
		{name: "whitespace control", src: "{{~#if a~}}\n  {{~ up b ~}}\n{{~/if~}}", unknown: []HelperCall{{"up", 2, 7}}, variables: []string{"a", "b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := OutlineOf(tc.src, 64)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Unknown, tc.unknown) {
				t.Errorf("unknown helpers %+v, want %+v", got.Unknown, tc.unknown)
			}
			if !slices.Equal(got.Variables, tc.variables) {
				t.Errorf("variables %q, want %q", got.Variables, tc.variables)
			}
			if got.WholeRoot != tc.wholeRoot {
				t.Errorf("whole root %v, want %v", got.WholeRoot, tc.wholeRoot)
			}
		})
	}
	// What Parse refuses, OutlineOf refuses.
	if _, err := OutlineOf("{{#if a}}", 64); err == nil {
		t.Fatal("an unclosed block outlined")
	}
	if _, err := OutlineOf(strings.Repeat("{{#if a}}", 5)+strings.Repeat("{{/if}}", 5), 4); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("too deep: %v", err)
	}
}

// TestHelpers: the list is the runtime's. A call of a name the runtime
// lacks reads the context under that name (a value there "is not a
// function"); a built-in helper never does.
func TestHelpers(t *testing.T) {
	want := []string{"blockHelperMissing", "each", "helperMissing", "if", "log", "lookup", "unless", "with"}
	if got := Helpers(); !slices.Equal(got, want) {
		t.Fatalf("Helpers() = %q, want %q", got, want)
	}
	names := append(Helpers(), "upper", "repeat", "formatDate")
	m := map[string]any{"a": []int{1}}
	for _, name := range names {
		m[name] = 1
	}
	b, _ := json.Marshal(m)
	values, err := ParseValues(b, 64)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		for _, src := range []string{"{{#" + name + " a}}x{{/" + name + "}}", "{{" + name + " a}}", "{{" + name + " a k=1}}"} {
			tpl, err := Parse(src, 64)
			if err != nil {
				t.Fatal(err)
			}
			_, err = tpl.Render(values, 1<<10)
			unknown := err != nil && err.Error() == name+" is not a function"
			if unknown == slices.Contains(Helpers(), name) {
				t.Errorf("%s: render error %v", src, err)
			}
		}
	}
}

// reMissing matches the render errors of a call to a helper the
// runtime lacks (not those of a built-in helper misused: "if outside a
// block: fn is not a function").
var reMissing = regexp.MustCompile(`^(Missing helper: .*|.* is not a function)$`)

func isMissing(err error) bool {
	var re *RenderError
	return errors.As(err, &re) && reMissing.MatchString(re.Message) && !strings.Contains(re.Message, "outside a block")
}

// reName finds the names a template may read.
var reName = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// checkOutline holds the outline of src to the runtime (on the names in
// src set to true, to an object of them, or to values): a render that
// fails for want of a helper has an unknown helper call in the
// outline; and when the outline has none and does not read the root
// context as a whole, dropping from the values every key that is not
// one of its variables changes neither the output nor the error.
func checkOutline(t *testing.T, src string, extra []byte) {
	t.Helper()
	out, err := OutlineOf(src, 64)
	tpl, perr := Parse(src, 64)
	if (err == nil) != (perr == nil) {
		t.Fatalf("OutlineOf(%q): %v, Parse: %v", src, err, perr)
	}
	if err != nil {
		return
	}
	if !slices.IsSorted(out.Variables) || len(slices.Compact(slices.Clone(out.Variables))) != len(out.Variables) {
		t.Fatalf("OutlineOf(%q): variables %q not sorted and unique", src, out.Variables)
	}
	lines := 1 + strings.Count(src, "\n")
	for _, c := range out.Unknown {
		if c.Line < 1 || c.Line > lines || c.Column < 1 {
			t.Fatalf("OutlineOf(%q): call %+v out of the template", src, c)
		}
	}
	// The native runtime has no deadline: at most three nested loops
	// (a block inside a loop opens with #) over small values.
	if strings.Count(src, "#") > 2 {
		return
	}
	if len(extra) > 512 {
		extra = nil
	}
	names := reName.FindAllString(src, 8)
	inner := map[string]any{}
	for _, n := range names {
		inner[n] = n
	}
	full := []map[string]any{{}, {}, {}}
	for _, n := range names {
		full[1][n] = true
		full[2][n] = inner
	}
	if len(extra) > 0 {
		var m map[string]any
		if json.Unmarshal(extra, &m) == nil && m != nil {
			full = append(full, m)
		}
	}
	render := func(m map[string]any) (string, error) {
		b, _ := json.Marshal(m)
		v, err := ParseValues(b, 64)
		if err != nil {
			t.Fatalf("values %s: %v", b, err)
		}
		return tpl.Render(v, 1<<16)
	}
	for _, m := range full {
		s, err := render(m)
		if isMissing(err) && len(out.Unknown) == 0 {
			t.Fatalf("OutlineOf(%q) finds no unknown helper, and the render fails: %v", src, err)
		}
		if len(out.Unknown) > 0 || out.WholeRoot || errors.Is(err, ErrOutputTooLarge) {
			continue
		}
		kept := map[string]any{}
		for _, v := range out.Variables {
			if x, ok := m[v]; ok {
				kept[v] = x
			}
		}
		s2, err2 := render(kept)
		if s != s2 || (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) {
			t.Fatalf("OutlineOf(%q): variables %q; with %v: %q, %v; with only the variables: %q, %v", src, out.Variables, m, s, err, s2, err2)
		}
	}
}

// TestOutlineCorpus: checkOutline on the differential corpus.
func TestOutlineCorpus(t *testing.T) {
	for _, c := range corpus(t) {
		t.Run(c.Name, func(t *testing.T) { checkOutline(t, c.Template, []byte(c.Values)) })
	}
}

type corpusCase struct {
	Name     string `json:"name"`
	Template string `json:"template"`
	Values   string `json:"values"`
}

func corpus(tb testing.TB) []corpusCase {
	raw, err := os.ReadFile("../../testdata/corpus.json")
	if err != nil {
		tb.Fatal(err)
	}
	var cases []corpusCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		tb.Fatal(err)
	}
	return cases
}

// FuzzOutline: checkOutline on any template; the seeds are the
// corpus's templates and TestOutline's.
func FuzzOutline(f *testing.F) {
	for _, c := range corpus(f) {
		f.Add(c.Template, []byte(c.Values))
	}
	for _, s := range []string{"{{upper title}}", "{{#repeat 3}}x{{/repeat}}", `{{formatDate date "YYYY"}}`, "{{foo (bar x)}}",
		"{{#each xs as |fmt|}}{{fmt 1}}{{/each}}", "{{#show}}{{badge}}{{/show}}", "{{#with a}}{{../b}}{{/with}}", "{{badge size=2}}",
		"{{#if a}}{{else}}{{shout b}}{{/if}}", "{{> (pick x) }}", "{{#each this}}{{@key}}{{/each}}"} {
		f.Add(s, []byte(nil))
	}
	f.Fuzz(func(t *testing.T, src string, values []byte) {
		checkOutline(t, src, values)
	})
}
