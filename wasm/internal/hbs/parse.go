package hbs

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mailgun/raymond/v2/ast"

	"github.com/pictorhq/pictor/wasm/internal/raymond/lexer"
	"github.com/pictorhq/pictor/wasm/internal/raymond/parser"
)

// Template is a parsed template.
type Template struct {
	prog      *ast.Program
	useDepths bool
	sizeHint  int // the output buffer's initial capacity
}

// Parse parses src. A template nested deeper than maxDepth (blocks,
// else-if chains and subexpressions) is ErrTooDeep, found by a scan of
// the tokens before the recursive parser runs; a template that does not
// parse is a *SyntaxError.
func Parse(src string, maxDepth int) (*Template, error) {
	if mayNestDeeper(src, maxDepth) {
		if err := checkDepth(src, maxDepth); err != nil {
			return nil, err
		}
	}
	prog, err := parser.Parse(src)
	if err != nil {
		return nil, locate(src, err)
	}
	return &Template{prog: prog, useDepths: usesDepths(prog), sizeHint: 2*len(src) + 1024}, nil
}

// usesDepths reports whether a template has ../ paths: handlebars.js
// tracks the depths of contexts only then (and so may this runtime).
func usesDepths(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.Program:
		if n == nil {
			return false
		}
		for _, s := range n.Body {
			if usesDepths(s) {
				return true
			}
		}
	case *ast.MustacheStatement:
		return usesDepths(n.Expression)
	case *ast.BlockStatement:
		return usesDepths(n.Expression) || usesDepths(n.Program) || usesDepths(n.Inverse)
	case *ast.PartialStatement:
		for _, p := range n.Params {
			if usesDepths(p) {
				return true
			}
		}
		return usesDepths(n.Name) || usesDepths(n.Hash)
	case *ast.Expression:
		for _, p := range n.Params {
			if usesDepths(p) {
				return true
			}
		}
		return usesDepths(n.Path) || usesDepths(n.Hash)
	case *ast.SubExpression:
		return usesDepths(n.Expression)
	case *ast.Hash:
		if n == nil {
			return false
		}
		for _, p := range n.Pairs {
			if usesDepths(p.Val) {
				return true
			}
		}
	case *ast.PathExpression:
		return n.Depth > 0 && !n.Data
	}
	return false
}

// mayNestDeeper is a cheap bound: every level of nesting opens with "{{"
// or "(", so a template with no more of those than maxDepth cannot nest
// deeper.
func mayNestDeeper(src string, maxDepth int) bool {
	return strings.Count(src, "{{")+strings.Count(src, "(") > maxDepth
}

func checkDepth(src string, maxDepth int) error {
	var stack []int // per open block: 1 + its else-if chain links
	depth, parens := 0, 0
	// Scan, not Collect: stop at the first token too deep.
	lex := lexer.Scan(src)
	for {
		tok := lex.NextToken()
		if tok.Kind == lexer.TokenEOF || tok.Kind == lexer.TokenError {
			return nil
		}
		switch tok.Kind {
		case lexer.TokenOpenBlock, lexer.TokenOpenInverse, lexer.TokenOpenRawBlock:
			stack = append(stack, 1)
			depth++
		case lexer.TokenOpenInverseChain:
			if len(stack) > 0 {
				stack[len(stack)-1]++
				depth++
			}
		case lexer.TokenOpenEndBlock, lexer.TokenOpenEndRawBlock:
			if len(stack) > 0 {
				depth -= stack[len(stack)-1]
				stack = stack[:len(stack)-1]
			}
		case lexer.TokenOpenSexpr:
			parens++
		case lexer.TokenCloseSexpr:
			parens--
		}
		if depth+parens > maxDepth {
			return fmt.Errorf("%w: the template nests deeper than %d", ErrTooDeep, maxDepth)
		}
	}
}

var (
	reLine  = regexp.MustCompile(`^Parse error on line (\d+):\n`)
	reNode  = regexp.MustCompile(`Pos:(\d+)\}\s*$`)
	reGot   = regexp.MustCompile(`got: '(.*)'$`)
	reToken = regexp.MustCompile(`\nToken: (.*)$`)
)

// locate turns the parser's error into a *SyntaxError with a column.
// raymond's messages name the line and the offending token (or node,
// with its byte position); the token is found again among those the
// lexer yields on that line, and when several look alike, the first one
// whose prefix of the template fails the same way is the one.
func locate(src string, perr error) *SyntaxError {
	msg := perr.Error()
	se := &SyntaxError{Line: 1, Column: 1}
	if m := reLine.FindStringSubmatch(msg); m != nil {
		se.Line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	}
	se.Message = strings.ReplaceAll(msg, "\n", ": ")
	pos := -1
	switch {
	case strings.Contains(msg, "\nNode: "):
		if m := reNode.FindStringSubmatch(msg); m != nil {
			pos, _ = strconv.Atoi(m[1])
		}
		se.Message = msg[:strings.Index(msg, "\nNode: ")]
	default:
		var repr string
		if m := reToken.FindStringSubmatch(msg); m != nil {
			repr = m[1]
		} else if m := reGot.FindStringSubmatch(msg); m != nil {
			repr = m[1]
		}
		if strings.HasPrefix(msg, "Lexer error\n") {
			if s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(repr, "Error{"), "}")); err == nil {
				se.Message = s
			}
		}
		pos = findToken(src, se.Line, repr, msg)
	}
	if pos >= 0 && pos <= len(src) {
		se.Line, se.Column = lineColumn(src, pos)
	}
	se.Message = reTokenRepr.ReplaceAllStringFunc(se.Message, func(repr string) string {
		m := reTokenRepr.FindStringSubmatch(repr)
		if m[1] == "EOF" {
			return "end of template"
		}
		if m[2] != "" {
			return m[2]
		}
		return m[1]
	})
	se.Message = strings.ReplaceAll(se.Message, ": Token: ", " at ")
	return se
}

// reTokenRepr matches a token as raymond prints it in messages,
// ID{"foo"}, Close{"}}"} or EOF, quoted or not.
var reTokenRepr = regexp.MustCompile(`'?\b([A-Z][A-Za-z]+)(?:\{("(?:[^"\\]|\\.)*")\})?'?$`)

func findToken(src string, line int, repr, msg string) int {
	if repr == "" {
		return -1
	}
	var cands []lexer.Token
	for _, tok := range lexer.Collect(src) {
		if tok.Line == line && tok.String() == repr {
			cands = append(cands, tok)
		}
	}
	switch len(cands) {
	case 0:
		return -1
	case 1:
		return cands[0].Pos
	}
	for _, tok := range cands {
		end := tok.Pos + len(tok.Val)
		if end > len(src) {
			end = len(src)
		}
		if _, err := parser.Parse(src[:end]); err != nil && err.Error() == "Parse error on line "+strconv.Itoa(line)+":\n"+msg {
			return tok.Pos
		}
	}
	return cands[0].Pos
}

// lineColumn returns the 1-based line and column (in runes) of byte pos.
func lineColumn(src string, pos int) (line, col int) {
	before := src[:pos]
	line = 1 + strings.Count(before, "\n")
	if i := strings.LastIndexByte(before, '\n'); i >= 0 {
		before = before[i+1:]
	}
	return line, 1 + utf8.RuneCountInString(before)
}
