package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestHelpersAreTheSandboxs: Helpers is what the sandbox runs. The
// evaluator (C) knows the same names, and in the sandbox a call of each
// is a helper call, while a call of any other name reads the values
// under that name ("... is not a function" when it finds a value there).
func TestHelpersAreTheSandboxs(t *testing.T) {
	src, err := os.ReadFile("evaluator/eval.c")
	if err != nil {
		t.Fatal(err)
	}
	body := regexp.MustCompile(`(?s)static int builtin\(Str name\) \{(.*?)\n\}`).FindSubmatch(src)
	if body == nil {
		t.Fatal("eval.c: no builtin()")
	}
	var inC []string
	for _, m := range regexp.MustCompile(`LIT\("([^"]+)"\)`).FindAllSubmatch(body[1], -1) {
		inC = append(inC, string(m[1]))
	}
	slices.Sort(inC)
	if !slices.Equal(inC, Helpers()) {
		t.Fatalf("the evaluator's helpers %q, Helpers() %q", inC, Helpers())
	}

	e := sharedEngine(t)
	names := append(Helpers(), "upper", "repeat", "formatDate", "eq")
	values := map[string]any{"a": []int{1}}
	for _, name := range names {
		values[name] = 1
	}
	raw, _ := json.Marshal(values)
	for _, name := range names {
		for _, tpl := range []string{"{{#" + name + " a}}x{{/" + name + "}}", "{{" + name + " a}}", "{{" + name + " k=1}}", "{{lookup (" + name + " a) 0}}"} {
			_, err := e.Render(context.Background(), tpl, raw)
			unknown := errors.Is(err, ErrRender) && strings.Contains(err.Error(), name+" is not a function")
			if unknown == slices.Contains(Helpers(), name) {
				t.Errorf("%s: %v", tpl, err)
			}
		}
	}
}

// TestOutlineMatchesSandbox: on the differential corpus and more,
// Outline fails exactly where Check does, with the same error, and a
// template the sandbox fails to render for want of a helper has an
// unknown helper call in its outline.
func TestOutlineMatchesSandbox(t *testing.T) {
	raw, err := os.ReadFile("testdata/corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []corpusCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	for _, tpl := range []string{"{{upper title}}", "{{#repeat 3}}x{{/repeat}}", `{{formatDate date "YYYY"}}`, "{{foo (bar x)}}",
		"{{#if (isEven n)}}e{{/if}}", "{{#if a}}\n{{else}}{{shout b}}{{/if}}", "{{#each xs as |fmt|}}{{fmt 1}}{{/each}}",
		"{{#if x}}", "{{/each}}", "{{a " + strings.Repeat("(b ", 70) + "c" + strings.Repeat(")", 70) + "}}", strings.Repeat("{{x}}", 120<<10)} {
		cases = append(cases, corpusCase{Name: tpl[:min(len(tpl), 40)], Template: tpl, Values: `{"title":"t","n":2,"xs":[1],"a":true,"date":"d"}`})
	}
	e := sharedEngine(t)
	missing := 0
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			checkErr := e.Check(context.Background(), c.Template)
			out, err := e.Outline(c.Template)
			var want, got *SyntaxError
			switch {
			case errors.As(checkErr, &want):
				if !errors.As(err, &got) || *got != *want {
					t.Fatalf("Check: %v; Outline: %v", checkErr, err)
				}
				return
			case checkErr != nil:
				if err == nil || errors.Is(err, ErrTooDeep) != errors.Is(checkErr, ErrTooDeep) ||
					errors.Is(err, ErrTemplateTooLarge) != errors.Is(checkErr, ErrTemplateTooLarge) {
					t.Fatalf("Check: %v; Outline: %v", checkErr, err)
				}
				return
			case err != nil:
				t.Fatalf("Check passes; Outline: %v", err)
			}
			_, rerr := e.Render(context.Background(), c.Template, []byte(c.Values))
			msg := ""
			if rerr != nil {
				msg = rerr.Error()
			}
			if errors.Is(rerr, ErrRender) && (strings.Contains(msg, "Missing helper") || strings.Contains(msg, "is not a function") && !strings.Contains(msg, "outside a block")) {
				missing++
				if len(out.UnknownHelpers) == 0 {
					t.Fatalf("render: %v; Outline finds no unknown helper", rerr)
				}
			}
		})
	}
	if missing < 5 {
		t.Fatalf("%d cases failed for want of a helper", missing)
	}
}

// TestOutlineCache: a template is outlined once while it is kept, each
// caller gets an outline of its own, and the cache keeps to its size.
func TestOutlineCache(t *testing.T) {
	e := newEngine(t, nil)
	const tpl = "{{upper title}}{{#each items}}{{x}}{{/each}}"
	first, err := e.Outline(tpl)
	if err != nil {
		t.Fatal(err)
	}
	want := &Outline{UnknownHelpers: []HelperCall{{Name: "upper", Line: 1, Column: 3}}, Variables: []string{"items", "title"}}
	if !reflect.DeepEqual(first, want) {
		t.Fatalf("Outline = %+v, want %+v", first, want)
	}
	first.Variables[0], first.UnknownHelpers[0].Name = "changed", "changed"
	again, err := e.Outline(tpl)
	if kept, _ := e.outlines.stats(); err != nil || !reflect.DeepEqual(again, want) || kept != 1 {
		t.Fatalf("again: %+v, %v; %d kept", again, err, kept)
	}
	_, err = e.Outline("{{#if a}}")
	if kept, _ := e.outlines.stats(); err == nil || kept != 1 {
		t.Fatalf("a syntax error: %v; %d kept", err, kept)
	}

	c := newOutlineCache()
	big := &Outline{Variables: []string{strings.Repeat("v", 1<<20)}}
	for i := range 10 {
		c.add([32]byte{byte(i)}, big)
	}
	if n, _ := c.stats(); n != outlineCacheBytes/big.size() {
		t.Fatalf("%d outlines of %d bytes kept, want %d", n, big.size(), outlineCacheBytes/big.size())
	}
	if _, ok := c.get([32]byte{9}); !ok {
		t.Fatal("the latest outline was dropped")
	}
	if _, ok := c.get([32]byte{0}); ok {
		t.Fatal("the oldest outline was kept")
	}
	c.add([32]byte{99}, &Outline{Variables: []string{strings.Repeat("v", outlineCacheBytes)}})
	if _, ok := c.get([32]byte{99}); ok {
		t.Fatal("an outline larger than the cache was kept")
	}
}
