package parser

import (
	"math/rand/v2"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/mailgun/raymond/v2/ast"
	upstreamlexer "github.com/mailgun/raymond/v2/lexer"
	upstream "github.com/mailgun/raymond/v2/parser"

	"github.com/pictorhq/pictor/wasm/internal/raymond/lexer"
)

// Tests of pictor's patches (../README.md); parser_test.go is upstream's.

// TestWhitespaceWindows: each whitespace regexp gives on headWindow's
// or tailWindow's part of a string what it gives on the whole string
// (patch "whitespace control on the ends only"): every string of up to
// 4 bytes over whitespace and two letters, and random ones.
func TestWhitespaceWindows(t *testing.T) {
	t.Parallel()
	alphabet := " \t\r\n\f\vax"
	strs := []string{""}
	for n, prev := 0, []string{""}; n < 4; n++ {
		var next []string
		for _, p := range prev {
			for i := range len(alphabet) {
				next = append(next, p+alphabet[i:i+1])
			}
		}
		strs, prev = append(strs, next...), next
	}
	rnd := rand.New(rand.NewPCG(7, 8))
	for range 2000 {
		b := make([]byte, rnd.IntN(16))
		for i := range b {
			b[i] = alphabet[rnd.IntN(len(alphabet))]
		}
		strs = append(strs, string(b))
	}
	for _, s := range strs {
		head, rest := headWindow(s)
		for _, r := range []*regexp.Regexp{rTrimLeft, rTrimLeftMultiple} {
			if got, want := r.ReplaceAllString(head, "")+rest, r.ReplaceAllString(s, ""); got != want {
				t.Fatalf("%s on %q: %q in the window, %q on the whole", r, s, got, want)
			}
		}
		for _, r := range []*regexp.Regexp{rNextWhitespace, rNextWhitespaceEnd} {
			if got, want := r.MatchString(head), r.MatchString(s); got != want {
				t.Fatalf("%s on %q: %t in the window, %t on the whole", r, s, got, want)
			}
		}
		rest, tail := tailWindow(s)
		for _, r := range []*regexp.Regexp{rTrimRight, rTrimRightMultiple} {
			if got, want := rest+r.ReplaceAllString(tail, ""), r.ReplaceAllString(s, ""); got != want {
				t.Fatalf("%s on %q: %q in the window, %q on the whole", r, s, got, want)
			}
		}
		for _, r := range []*regexp.Regexp{rPrevWhitespace, rPrevWhitespaceStart} {
			if got, want := r.MatchString(tail), r.MatchString(s); got != want {
				t.Fatalf("%s on %q: %t in the window, %t on the whole", r, s, got, want)
			}
		}
	}
}

// TestAgainstUpstream: where the patched lexer gives upstream's tokens
// (numbers aside, it does: see lexer.TestAgainstUpstream), the patched
// parser gives upstream's AST, whitespace control included, on the
// templates of the upstream tests and on random ones.
func TestAgainstUpstream(t *testing.T) {
	t.Parallel()
	for _, tt := range parserTests {
		compareWithUpstream(t, tt.input)
	}
	rnd := rand.New(rand.NewPCG(5, 6))
	for range 1000 {
		var b strings.Builder
		randomProgram(rnd, &b, 0)
		compareWithUpstream(t, b.String())
	}
}

// FuzzAgainstUpstream is TestAgainstUpstream on any input.
func FuzzAgainstUpstream(f *testing.F) {
	for _, tt := range parserTests {
		f.Add(tt.input)
	}
	f.Fuzz(compareWithUpstream)
}

// compareWithUpstream fails when input parses to another AST than
// upstream's, its tokens being upstream's. Only inputs that parse are
// given to upstream's parser: one that stops at an error leaves its
// lexer's goroutine blocked.
func compareWithUpstream(t *testing.T, input string) {
	got, err := Parse(input)
	if err != nil || !sameTokens(input) {
		return
	}
	want, err := upstream.Parse(input)
	if err != nil {
		t.Fatalf("%q: upstream fails (%v), not ours", input, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n%s\nupstream:\n%s", input, ast.Print(got), ast.Print(want))
	}
}

func sameTokens(input string) bool {
	got, want := lexer.Collect(input), upstreamlexer.Collect(input)
	if len(got) != len(want) {
		return false
	}
	for i, g := range got {
		w := want[i]
		if int(g.Kind) != int(w.Kind) || g.Val != w.Val || g.Pos != w.Pos || g.Line != w.Line {
			return false
		}
	}
	return true
}

// randomProgram writes a template that mostly parses, heavy in what
// whitespace control looks at: blocks (standalone or not), else, ~,
// comments, partials, and whitespace of every kind.
func randomProgram(rnd *rand.Rand, b *strings.Builder, depth int) {
	tilde := func() string {
		if rnd.IntN(3) == 0 {
			return "~"
		}
		return ""
	}
	ws := []string{" ", "  ", "\t", "\n", "\r\n", "\f", "\v", " \n ", "\n\n", "x", "a b", "\r"}
	for range rnd.IntN(6) {
		switch k := rnd.IntN(10); {
		case k < 4:
			b.WriteString(ws[rnd.IntN(len(ws))])
		case k == 4:
			b.WriteString("{{" + tilde() + "foo" + tilde() + "}}")
		case k == 5:
			b.WriteString([]string{"{{! c }}", "{{!-- c --}}", "{{~! c ~}}", "{{~!-- c --~}}"}[rnd.IntN(4)])
		case k == 6:
			b.WriteString("{{" + tilde() + "> p" + tilde() + "}}")
		case k == 7:
			b.WriteString("{{" + tilde() + "{u}" + tilde() + "}}")
		case depth < 3:
			name := []string{"if", "each", "with"}[rnd.IntN(3)]
			b.WriteString("{{" + tilde() + "#" + name + " a" + tilde() + "}}")
			randomProgram(rnd, b, depth+1)
			if rnd.IntN(2) == 0 {
				b.WriteString("{{" + tilde() + []string{"else", "^", "else if b"}[rnd.IntN(3)] + tilde() + "}}")
				randomProgram(rnd, b, depth+1)
			}
			b.WriteString("{{" + tilde() + "/" + name + tilde() + "}}")
		}
	}
}
