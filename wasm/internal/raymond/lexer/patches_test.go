package lexer

import (
	"math/rand/v2"
	"strings"
	"testing"

	upstream "github.com/mailgun/raymond/v2/lexer"
)

// Tests of pictor's patches (../README.md); lexer_test.go is upstream's.

// TestNumbers: numbers are handlebars.js's NUMBER, -?[0-9]+(\.[0-9]+)?
// before ~ } ) or a space; what else starts with a digit or '-' is an
// ID, and '+' starts nothing (patch "numbers").
func TestNumbers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		input string
		want  []Token // between {{foo and }} (or the error)
	}{
		{"integer", `{{foo 1}}`, []Token{tokNumber("1")}},
		{"leading zero", `{{foo 089}}`, []Token{tokNumber("089")}},
		{"negative decimal", `{{foo -1.5}}`, []Token{tokNumber("-1.5")}},
		{"before ~}}", `{{foo 1~}}`, []Token{tokNumber("1")}},
		{"before )", `{{foo (bar 2)}}`, []Token{tokOpenSexpr, tokID("bar"), tokNumber("2"), tokCloseSexpr}},
		{"hash value", `{{foo a=3}}`, []Token{tokID("a"), tokEquals, tokNumber("3")}},
		// raymond: TokenNumber (Go's number syntax)
		{"exponent is an ID", `{{foo 1e5}}`, []Token{tokID("1e5")}},
		{"large exponent is an ID", `{{foo 1e21}}`, []Token{tokID("1e21")}},
		{"hex is an ID", `{{foo 0x1F}}`, []Token{tokID("0x1F")}},
		{"imaginary is an ID", `{{foo 1i}}`, []Token{tokID("1i")}},
		{"lone minus is an ID", `{{foo -}}`, []Token{tokID("-")}},
		// raymond: "bad number syntax"
		{"digits then letters are an ID", `{{foo 1x}}`, []Token{tokID("1x")}},
		{"minus then letters is an ID", `{{foo -x}}`, []Token{tokID("-x")}},
		// raymond: TokenNumber "+1"
		{"plus is an error", `{{foo +1}}`, []Token{tokError("Unexpected character in expression: '+'")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := append([]Token{tokOpen, tokID("foo")}, tt.want...)
			switch {
			case tt.want[len(tt.want)-1].Kind == TokenError:
			case strings.HasSuffix(tt.input, "~}}"):
				want = append(want, tokCloseStrip, tokEOF)
			default:
				want = append(want, tokClose, tokEOF)
			}
			if got := Collect(tt.input); !equal(got, want, false) {
				t.Errorf("%s: got %v, want %v", tt.input, got, want)
			}
		})
	}
}

// TestNextTokenAfterEnd: tokens are made on demand, so NextToken after
// the last token (EOF or an error) returns EOF again, where raymond's
// lexer, fed by a goroutine, blocked for ever (patch "tokens on demand").
func TestNextTokenAfterEnd(t *testing.T) {
	t.Parallel()
	for _, input := range []string{"a {{b}} c", "{{b", ""} {
		l := Scan(input)
		for tok := l.NextToken(); tok.Kind != TokenEOF && tok.Kind != TokenError; tok = l.NextToken() {
		}
		for range 3 {
			if tok := l.NextToken(); tok.Kind != TokenEOF {
				t.Errorf("%q: after the end, %v", input, tok)
			}
		}
	}
}

// TestAgainstUpstream: but for numbers, the patched lexer gives
// upstream's tokens, positions and lines included, on the templates of
// the upstream tests and on random ones (patches "tokens on demand",
// "linear-time lexing").
func TestAgainstUpstream(t *testing.T) {
	t.Parallel()
	for _, tt := range lexTests {
		compareWithUpstream(t, tt.input)
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		compareWithUpstream(t, randomTemplate(rnd))
	}
}

// FuzzAgainstUpstream is TestAgainstUpstream on any input.
func FuzzAgainstUpstream(f *testing.F) {
	for _, tt := range lexTests {
		f.Add(tt.input)
	}
	f.Fuzz(compareWithUpstream)
}

// templatePieces are what randomTemplate strings together: mustaches
// (some cut short), escapes, comments, raw blocks, whitespace and text.
var templatePieces = []string{
	"{{", "}}", "{{~", "~}}", "{{{", "}}}", "{{~{", "}~}}", "{{&", "{{#", "{{/", "{{^", "{{>", "{{else", "{{^}}",
	"{{{{", "}}}}", "{{{{/", "{{!", "{{!--", "--}}", "\\{{", "\\\\{{", "\\",
	"foo", "a.b", "../c", "@index", "this", "true", "false", "as |x|", "=", "(", ")", "[a b]", `"s"`, "'t'",
	" ", "  ", "\t", "\n", "\r\n", "\f", "\v", "{", "}", "~", ".", "/", "|", "x", "é", "日本", "\xff",
}

func randomTemplate(rnd *rand.Rand) string {
	var b strings.Builder
	for range 1 + rnd.IntN(12) {
		b.WriteString(templatePieces[rnd.IntN(len(templatePieces))])
	}
	return b.String()
}

// compareWithUpstream fails unless both lexers give the same tokens for
// input, up to the first one where they differ because of the numbers
// patch: a token both start at a digit, '-' or '+'.
func compareWithUpstream(t *testing.T, input string) {
	got, want := Collect(input), upstream.Collect(input)
	for i := 0; i < len(got) && i < len(want); i++ {
		g, w := got[i], want[i]
		if int(g.Kind) == int(w.Kind) && g.Val == w.Val && g.Pos == w.Pos && g.Line == w.Line {
			continue
		}
		if g.Pos == w.Pos && g.Pos < len(input) && strings.IndexByte("0123456789-+", input[g.Pos]) >= 0 {
			return // numbers
		}
		t.Fatalf("%q: token %d is %v at %d line %d, upstream's %v at %d line %d", input, i, g, g.Pos, g.Line, w, w.Pos, w.Line)
	}
	if len(got) != len(want) {
		t.Fatalf("%q: %d tokens, upstream %d", input, len(got), len(want))
	}
}
