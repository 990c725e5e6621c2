// Package lexer provides a handlebars tokenizer.
package lexer

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// References:
//   - https://github.com/wycats/handlebars.js/blob/master/src/handlebars.l
//   - https://github.com/golang/go/blob/master/src/text/template/parse/lex.go

const (
	// Mustaches detection
	escapedEscapedOpenMustache  = "\\\\{{"
	escapedOpenMustache         = "\\{{"
	openMustache                = "{{"
	closeMustache               = "}}"
	closeStripMustache          = "~}}"
	closeUnescapedStripMustache = "}~}}"
)

const eof = -1

// lexFunc represents a function that returns the next lexer function.
type lexFunc func(*Lexer) lexFunc

// Lexer is a lexical analyzer.
type Lexer struct {
	input    string  // input to scan
	name     string  // lexer name, used for testing purpose
	tokens   []Token // pictor: scanned tokens not yet returned (was a channel fed by a goroutine)
	nextFunc lexFunc // the next function to execute

	pos   int // current byte position in input string
	line  int // current line position in input string
	width int // size of last rune scanned from input string
	start int // start position of the token we are scanning

	// the shameful contextual properties needed because `nextFunc` is not enough
	closeComment *regexp.Regexp // regexp to scan close of current comment
	rawBlock     bool           // are we parsing a raw block content ?
}

var (
	lookheadChars        = `[\s` + regexp.QuoteMeta("=~}/)|") + `]`
	literalLookheadChars = `[\s` + regexp.QuoteMeta("~})") + `]`

	// characters not allowed in an identifier
	unallowedIDChars = " \n\t!\"#%&'()*+,./;<=>@[\\]^`{|}~"

	// regular expressions
	rID                  = regexp.MustCompile(`^[^` + regexp.QuoteMeta(unallowedIDChars) + `]+`)
	rDotID               = regexp.MustCompile(`^\.` + lookheadChars)
	rTrue                = regexp.MustCompile(`^true` + literalLookheadChars)
	rFalse               = regexp.MustCompile(`^false` + literalLookheadChars)
	rOpenRaw             = regexp.MustCompile(`^\{\{\{\{`)
	rCloseRaw            = regexp.MustCompile(`^\}\}\}\}`)
	rOpenEndRaw          = regexp.MustCompile(`^\{\{\{\{/`)
	rOpenEndRawLookAhead = regexp.MustCompile(`\{\{\{\{/`)
	rOpenUnescaped       = regexp.MustCompile(`^\{\{~?\{`)
	rCloseUnescaped      = regexp.MustCompile(`^\}~?\}\}`)
	rOpenBlock           = regexp.MustCompile(`^\{\{~?#`)
	rOpenEndBlock        = regexp.MustCompile(`^\{\{~?/`)
	rOpenPartial         = regexp.MustCompile(`^\{\{~?>`)
	// {{^}} or {{else}}
	rInverse          = regexp.MustCompile(`^(\{\{~?\^\s*~?\}\}|\{\{~?\s*else\s*~?\}\})`)
	rOpenInverse      = regexp.MustCompile(`^\{\{~?\^`)
	rOpenInverseChain = regexp.MustCompile(`^\{\{~?\s*else`)
	// {{ or {{&
	rOpen            = regexp.MustCompile(`^\{\{~?&?`)
	rClose           = regexp.MustCompile(`^~?\}\}`)
	rOpenBlockParams = regexp.MustCompile(`^as\s+\|`)
	// {{!--  ... --}}
	rOpenCommentDash  = regexp.MustCompile(`^\{\{~?!--\s*`)
	rCloseCommentDash = regexp.MustCompile(`^\s*--~?\}\}`)
	// {{! ... }}
	rOpenComment  = regexp.MustCompile(`^\{\{~?!\s*`)
	rCloseComment = regexp.MustCompile(`^\s*~?\}\}`)
)

// Scan scans given input.
//
// Tokens can then be fetched sequentially thanks to NextToken() function on returned lexer.
func Scan(input string) *Lexer {
	return scanWithName(input, "")
}

// scanWithName scans given input, with a name used for testing
//
// Tokens can then be fetched sequentially thanks to NextToken() function on returned lexer.
func scanWithName(input string, name string) *Lexer {
	result := &Lexer{
		input:    input,
		name:     name,
		line:     1,
		nextFunc: lexContent, // pictor: run on demand by NextToken
	}

	return result
}

// Collect scans and collect all tokens.
//
// This should be used for debugging purpose only. You should use Scan() and lexer.NextToken() functions instead.
func Collect(input string) []Token {
	var result []Token

	l := Scan(input)
	for {
		token := l.NextToken()
		result = append(result, token)

		if token.Kind == TokenEOF || token.Kind == TokenError {
			break
		}
	}

	return result
}

// NextToken returns the next scanned token.
func (l *Lexer) NextToken() Token {
	// pictor: run the state functions until a token is ready.
	for len(l.tokens) == 0 {
		if l.nextFunc == nil {
			// lexing is over: the last token was EOF or an error
			return Token{Kind: TokenEOF, Pos: l.pos, Line: l.line}
		}
		l.nextFunc = l.nextFunc(l)
	}
	result := l.tokens[0]
	l.tokens = l.tokens[1:]

	return result
}

// next returns next character from input, or eof of there is nothing left to scan
func (l *Lexer) next() rune {
	if l.pos >= len(l.input) {
		l.width = 0
		return eof
	}

	r, w := utf8.DecodeRuneInString(l.input[l.pos:])
	l.width = w
	l.pos += l.width

	return r
}

func (l *Lexer) produce(kind TokenKind, val string) {
	l.tokens = append(l.tokens, Token{kind, val, l.start, l.line})

	// scanning a new token
	l.start = l.pos

	// update line number
	l.line += strings.Count(val, "\n")
}

// emit emits a new scanned token
func (l *Lexer) emit(kind TokenKind) {
	l.produce(kind, l.input[l.start:l.pos])
}

// emitContent emits scanned content
func (l *Lexer) emitContent() {
	if l.pos > l.start {
		l.emit(TokenContent)
	}
}

// emitString emits a scanned string
func (l *Lexer) emitString(delimiter rune) {
	str := l.input[l.start:l.pos]

	// replace escaped delimiters
	str = strings.Replace(str, "\\"+string(delimiter), string(delimiter), -1)

	l.produce(TokenString, str)
}

// peek returns but does not consume the next character in the input
func (l *Lexer) peek() rune {
	r := l.next()
	l.backup()
	return r
}

// backup steps back one character
//
// WARNING: Can only be called once per call of next
func (l *Lexer) backup() {
	l.pos -= l.width
}

// ignoreskips all characters that have been scanned up to current position
func (l *Lexer) ignore() {
	l.start = l.pos
}

// errorf emits an error token
func (l *Lexer) errorf(format string, args ...interface{}) lexFunc {
	l.tokens = append(l.tokens, Token{TokenError, fmt.Sprintf(format, args...), l.start, l.line}) // pictor
	return nil
}

// isString returns true if content at current scanning position starts with given string
func (l *Lexer) isString(str string) bool {
	return strings.HasPrefix(l.input[l.pos:], str)
}

// findRegexp returns the first string from current scanning position that matches given regular expression
func (l *Lexer) findRegexp(r *regexp.Regexp) string {
	// pictor: skip a regexp where its match cannot start, and run it on
	// no more input than it can match: Go's backtracker costs time in
	// proportion to the input it is given, which made lexing quadratic.
	in := l.input[l.pos:]
	a := accel[r]
	if a.first != "" && (in == "" || strings.IndexByte(a.first, in[0]) < 0) {
		return ""
	}
	if a.afterOpen != "" {
		rest, ok := strings.CutPrefix(in, "{{")
		if rest = strings.TrimPrefix(rest, "~"); !ok || rest == "" || strings.IndexByte(a.afterOpen, rest[0]) < 0 {
			return ""
		}
	}
	if a.match != nil {
		return a.match(in)
	}
	if r == rID {
		// a run of bytes other than unallowedIDChars (all ASCII, so
		// bytes of other runes, valid or not, are allowed)
		i := 0
		for i < len(in) && !idStop[in[i]] {
			i++
		}
		return in[:i]
	}
	return r.FindString(in)
}

const space = "\t\n\f\r " // \s

// pictor: idStop marks the bytes of unallowedIDChars.
var idStop = func() (stop [256]bool) {
	for i := 0; i < len(unallowedIDChars); i++ {
		stop[unallowedIDChars[i]] = true
	}
	return stop
}()

// pictor: what findRegexp knows of a regexp.
type regexpAccel struct {
	first     string              // the bytes a match can start with ("": any)
	afterOpen string              // for \{\{~?..., the bytes that can come next
	match     func(string) string // a hand-written matcher
}

// pictor: accel gathers firstBytes, afterOpen and fastMatch.
var accel = func() map[*regexp.Regexp]regexpAccel {
	m := map[*regexp.Regexp]regexpAccel{}
	for r, f := range firstBytes {
		a := m[r]
		a.first = f
		m[r] = a
	}
	for r, f := range afterOpen {
		a := m[r]
		a.afterOpen = f
		m[r] = a
	}
	for r, f := range fastMatch {
		a := m[r]
		a.match = f
		m[r] = a
	}
	return m
}()

var (
	// pictor: the bytes each anchored regexp's match can start with;
	// none of them matches the empty string.
	firstBytes = map[*regexp.Regexp]string{
		rDotID: ".", rTrue: "t", rFalse: "f", rOpenRaw: "{", rCloseRaw: "}", rOpenEndRaw: "{",
		rOpenUnescaped: "{", rCloseUnescaped: "}", rOpenBlock: "{", rOpenEndBlock: "{", rOpenPartial: "{",
		rInverse: "{", rOpenInverse: "{", rOpenInverseChain: "{", rOpen: "{", rClose: "~}",
		rOpenBlockParams: "a", rOpenCommentDash: "{", rOpenComment: "{",
		rCloseCommentDash: space + "-", rCloseComment: space + "~}",
	}
	// pictor: for regexps starting with \{\{~?, the bytes that can come next.
	afterOpen = map[*regexp.Regexp]string{
		rInverse: "^e" + space, rOpenInverseChain: "e" + space, rOpenCommentDash: "!", rOpenComment: "!",
	}
	// pictor: hand-written matchers for the short regexps, giving the
	// same matches (TestFastMatch).
	fastMatch = map[*regexp.Regexp]func(string) string{
		rOpenRaw:        literal("{{{{"),
		rCloseRaw:       literal("}}}}"),
		rOpenEndRaw:     literal("{{{{/"),
		rOpenUnescaped:  openThen('{'),
		rOpenBlock:      openThen('#'),
		rOpenEndBlock:   openThen('/'),
		rOpenPartial:    openThen('>'),
		rOpenInverse:    openThen('^'),
		rCloseUnescaped: alternatives("}}}", "}~}}"),
		rClose:          alternatives("}}", "~}}"),
		rOpen: func(s string) string {
			n, ok := 2, strings.HasPrefix(s, "{{")
			if !ok {
				return ""
			}
			if n < len(s) && s[n] == '~' {
				n++
			}
			if n < len(s) && s[n] == '&' {
				n++
			}
			return s[:n]
		},
		rDotID: followedBy(".", space+"=~}/)|"),
		rTrue:  followedBy("true", space+"~})"),
		rFalse: followedBy("false", space+"~})"),
	}
)

// indexRegexp returns the index of the first string from current scanning position that matches given regular expression
//
// It returns -1 if not found
func (l *Lexer) indexRegexp(r *regexp.Regexp) int {
	loc := r.FindStringIndex(l.input[l.pos:])
	if loc == nil {
		return -1
	}
	return loc[0]
}

// lexContent scans content (ie: not between mustaches)
func lexContent(l *Lexer) lexFunc {
	var next lexFunc

	if l.rawBlock {
		if i := l.indexRegexp(rOpenEndRawLookAhead); i != -1 {
			// {{{{/
			l.rawBlock = false
			l.pos += i

			next = lexOpenMustache
		} else {
			return l.errorf("Unclosed raw block")
		}
	} else if l.isString(escapedEscapedOpenMustache) {
		// \\{{

		// emit content with only one escaped escape
		l.next()
		l.emitContent()

		// ignore second escaped escape
		l.next()
		l.ignore()

		next = lexContent
	} else if l.isString(escapedOpenMustache) {
		// \{{
		next = lexEscapedOpenMustache
	} else if str := l.findRegexp(rOpenCommentDash); str != "" {
		// {{!--
		l.closeComment = rCloseCommentDash

		next = lexComment
	} else if str := l.findRegexp(rOpenComment); str != "" {
		// {{!
		l.closeComment = rCloseComment

		next = lexComment
	} else if l.isString(openMustache) {
		// {{
		next = lexOpenMustache
	}

	if next != nil {
		// emit scanned content
		l.emitContent()

		// scan next token
		return next
	}

	// pictor: no mustache, escape or comment starts before the next '{'
	// or '\\': skip to it (or to the end) at once.
	if c := l.peek(); c != '{' && c != '\\' && c != eof {
		if i := strings.IndexAny(l.input[l.pos:], "{\\"); i > 0 {
			l.pos += i
			return lexContent
		}
		l.pos = len(l.input)
	}

	// scan next rune
	if l.next() == eof {
		// emit scanned content
		l.emitContent()

		// this is over
		l.emit(TokenEOF)
		return nil
	}

	// continue content scanning
	return lexContent
}

// lexEscapedOpenMustache scans \{{
func lexEscapedOpenMustache(l *Lexer) lexFunc {
	// ignore escape character
	l.next()
	l.ignore()

	// scan mustaches
	for l.peek() == '{' {
		l.next()
	}

	return lexContent
}

// lexOpenMustache scans {{
func lexOpenMustache(l *Lexer) lexFunc {
	var str string
	var tok TokenKind

	nextFunc := lexExpression

	if str = l.findRegexp(rOpenEndRaw); str != "" {
		tok = TokenOpenEndRawBlock
	} else if str = l.findRegexp(rOpenRaw); str != "" {
		tok = TokenOpenRawBlock
		l.rawBlock = true
	} else if str = l.findRegexp(rOpenUnescaped); str != "" {
		tok = TokenOpenUnescaped
	} else if str = l.findRegexp(rOpenBlock); str != "" {
		tok = TokenOpenBlock
	} else if str = l.findRegexp(rOpenEndBlock); str != "" {
		tok = TokenOpenEndBlock
	} else if str = l.findRegexp(rOpenPartial); str != "" {
		tok = TokenOpenPartial
	} else if str = l.findRegexp(rInverse); str != "" {
		tok = TokenInverse
		nextFunc = lexContent
	} else if str = l.findRegexp(rOpenInverse); str != "" {
		tok = TokenOpenInverse
	} else if str = l.findRegexp(rOpenInverseChain); str != "" {
		tok = TokenOpenInverseChain
	} else if str = l.findRegexp(rOpen); str != "" {
		tok = TokenOpen
	} else {
		// this is rotten
		panic("Current pos MUST be an opening mustache")
	}

	l.pos += len(str)
	l.emit(tok)

	return nextFunc
}

// lexCloseMustache scans }} or ~}}
func lexCloseMustache(l *Lexer) lexFunc {
	var str string
	var tok TokenKind

	if str = l.findRegexp(rCloseRaw); str != "" {
		// }}}}
		tok = TokenCloseRawBlock
	} else if str = l.findRegexp(rCloseUnescaped); str != "" {
		// }}}
		tok = TokenCloseUnescaped
	} else if str = l.findRegexp(rClose); str != "" {
		// }}
		tok = TokenClose
	} else {
		// this is rotten
		panic("Current pos MUST be a closing mustache")
	}

	l.pos += len(str)
	l.emit(tok)

	return lexContent
}

// lexExpression scans inside mustaches
func lexExpression(l *Lexer) lexFunc {
	// search close mustache delimiter
	if l.isString(closeMustache) || l.isString(closeStripMustache) || l.isString(closeUnescapedStripMustache) {
		return lexCloseMustache
	}

	// search some patterns before advancing scanning position

	// "as |"
	if str := l.findRegexp(rOpenBlockParams); str != "" {
		l.pos += len(str)
		l.emit(TokenOpenBlockParams)
		return lexExpression
	}

	// ..
	if l.isString("..") {
		l.pos += len("..")
		l.emit(TokenID)
		return lexExpression
	}

	// .
	if str := l.findRegexp(rDotID); str != "" {
		l.pos += len(".")
		l.emit(TokenID)
		return lexExpression
	}

	// true
	if str := l.findRegexp(rTrue); str != "" {
		l.pos += len("true")
		l.emit(TokenBoolean)
		return lexExpression
	}

	// false
	if str := l.findRegexp(rFalse); str != "" {
		l.pos += len("false")
		l.emit(TokenBoolean)
		return lexExpression
	}

	// let's scan next character
	switch r := l.next(); {
	case r == eof:
		return l.errorf("Unclosed expression")
	case isIgnorable(r):
		return lexIgnorable
	case r == '(':
		l.emit(TokenOpenSexpr)
	case r == ')':
		l.emit(TokenCloseSexpr)
	case r == '=':
		l.emit(TokenEquals)
	case r == '@':
		l.emit(TokenData)
	case r == '"' || r == '\'':
		l.backup()
		return lexString
	case r == '/' || r == '.':
		l.emit(TokenSep)
	case r == '|':
		l.emit(TokenCloseBlockParams)
	case r == '-' || (r >= '0' && r <= '9'):
		// pictor: handlebars.js's NUMBER; what else starts so is an ID
		// ("1e5", "0x1", "-x"), and '+' starts nothing.
		l.backup()
		if n := numberLength(l.input[l.pos:]); n > 0 {
			l.pos += n
			l.emit(TokenNumber)
			return lexExpression
		}
		return lexIdentifier
	case r == '[':
		return lexPathLiteral
	case !strings.ContainsRune(unallowedIDChars, r):
		l.backup()
		return lexIdentifier
	default:
		return l.errorf("Unexpected character in expression: '%c'", r)
	}

	return lexExpression
}

// lexComment scans {{!-- or {{!
func lexComment(l *Lexer) lexFunc {
	if str := l.findRegexp(l.closeComment); str != "" {
		l.pos += len(str)
		l.emit(TokenComment)

		return lexContent
	}

	if r := l.next(); r == eof {
		return l.errorf("Unclosed comment")
	}

	return lexComment
}

// lexIgnorable scans all following ignorable characters
func lexIgnorable(l *Lexer) lexFunc {
	for isIgnorable(l.peek()) {
		l.next()
	}
	l.ignore()

	return lexExpression
}

// lexString scans a string
func lexString(l *Lexer) lexFunc {
	// get string delimiter
	delim := l.next()
	var prev rune

	// ignore delimiter
	l.ignore()

	for {
		r := l.next()
		if r == eof || r == '\n' {
			return l.errorf("Unterminated string")
		}

		if (r == delim) && (prev != '\\') {
			break
		}

		prev = r
	}

	// remove end delimiter
	l.backup()

	// emit string
	l.emitString(delim)

	// skip end delimiter
	l.next()
	l.ignore()

	return lexExpression
}

// numberLength is the length of handlebars.js's NUMBER token at the
// start of s, -?[0-9]+(?:\.[0-9]+)? followed by one of its literal
// lookahead characters (~}) or a space), or 0.
//
// pictor: replaces lexNumber, which took Go's number syntax.
func numberLength(s string) int {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == digits {
		return 0
	}
	lookahead := func(i int) bool { return i < len(s) && strings.IndexByte("~}) \t\n\r\f\v", s[i]) >= 0 }
	if i+1 < len(s) && s[i] == '.' && s[i+1] >= '0' && s[i+1] <= '9' {
		j := i + 1
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if lookahead(j) {
			return j
		}
	}
	if lookahead(i) {
		return i
	}
	return 0
}

// lexIdentifier scans an ID
func lexIdentifier(l *Lexer) lexFunc {
	str := l.findRegexp(rID)
	if len(str) == 0 {
		// this is rotten
		panic("Identifier expected")
	}

	l.pos += len(str)
	l.emit(TokenID)

	return lexExpression
}

// lexPathLiteral scans an [ID]
func lexPathLiteral(l *Lexer) lexFunc {
	for {
		r := l.next()
		if r == eof || r == '\n' {
			return l.errorf("Unterminated path literal")
		}

		if r == ']' {
			break
		}
	}

	l.emit(TokenID)

	return lexExpression
}

// isIgnorable returns true if given character is ignorable (ie. whitespace of line feed)
func isIgnorable(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n'
}

// pictor: matchers for fastMatch.

func literal(lit string) func(string) string {
	return func(s string) string {
		if strings.HasPrefix(s, lit) {
			return lit
		}
		return ""
	}
}

// openThen matches \{\{~?c.
func openThen(c byte) func(string) string {
	return func(s string) string {
		n, ok := 2, strings.HasPrefix(s, "{{")
		if !ok {
			return ""
		}
		if n < len(s) && s[n] == '~' {
			n++
		}
		if n < len(s) && s[n] == c {
			return s[:n+1]
		}
		return ""
	}
}

func alternatives(lits ...string) func(string) string {
	return func(s string) string {
		for _, lit := range lits {
			if strings.HasPrefix(s, lit) {
				return lit
			}
		}
		return ""
	}
}

// followedBy matches lit and one byte of set.
func followedBy(lit, set string) func(string) string {
	return func(s string) string {
		if len(s) > len(lit) && strings.HasPrefix(s, lit) && strings.IndexByte(set, s[len(lit)]) >= 0 {
			return s[:len(lit)+1]
		}
		return ""
	}
}
