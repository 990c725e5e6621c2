package hbs

import (
	"slices"

	"github.com/mailgun/raymond/v2/ast"
)

// Helpers returns the names of the helpers the runtime provides,
// handlebars.js's built-in helpers (builtins), sorted. A helper call of
// any other name fails at render ("Missing helper", "... is not a
// function") or renders nothing.
func Helpers() []string {
	names := make([]string, 0, len(builtins))
	for name := range builtins {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// HelperCall is a call of a helper the runtime does not provide: Name
// as written (a path's original text), Line and Column 1-based, the
// column in characters, as in a SyntaxError.
type HelperCall struct {
	Name         string
	Line, Column int
}

// Outline is what a template refers to, read from its syntax tree.
type Outline struct {
	// Unknown are the helper calls (a mustache or block with parameters
	// or a hash, any subexpression) whose helper is not a built-in one,
	// classified as the runtime classifies them (a block parameter
	// called with arguments is not a helper call), in source order,
	// wherever they stand: unrendered branches included.
	Unknown []HelperCall
	// Variables are the names the template reads from the root of its
	// values: the first part of each path evaluated in the root context
	// (see OutlineOf), sorted.
	Variables []string
	// WholeRoot: the template hands the root context itself to a helper
	// or a block (`{{#each this}}`, `{{lookup . "x"}}`, `{{#with
	// @root}}`), so that any of its keys may matter.
	WholeRoot bool
}

// OutlineOf parses src as Parse does and outlines it.
//
// The root context is the template's top level, and in it the bodies
// of #if and #unless, every {{else}} branch of a built-in block, and the
// body of a section ({{#name}}...{{/name}} on a value: a boolean runs it
// in the same context); the bodies of #each and #with run in another
// context, whose paths are not variables unless they climb back with
// ../ or start at @root. Paths that name a block parameter, data
// (@index...) and the literals null and undefined are not variables; a
// helper's name is not one. A partial (always missing here) evaluates
// a dynamic name, never its parameters.
func OutlineOf(src string, maxDepth int) (Outline, error) {
	t, err := Parse(src, maxDepth)
	if err != nil {
		return Outline{}, err
	}
	w := &outliner{src: src, vars: map[string]bool{}}
	w.program(t.prog, place{lo: 0, hi: 0})
	out := Outline{WholeRoot: w.wholeRoot}
	// Subexpressions are walked before the call they are parameters of.
	slices.SortStableFunc(w.unknown, func(a, b call) int { return a.pos - b.pos })
	for _, c := range w.unknown {
		line, col := lineColumn(src, c.pos)
		out.Unknown = append(out.Unknown, HelperCall{Name: c.name, Line: line, Column: col})
	}
	for name := range w.vars {
		out.Variables = append(out.Variables, name)
	}
	slices.Sort(out.Variables)
	return out, nil
}

// call is an unknown helper's call at byte pos.
type call struct {
	name string
	pos  int
}

// place is where a program runs: the range of how many context changes
// may separate its context from the root's (lo > hi: not rendered, or
// never the root's), and the block parameters in scope.
type place struct {
	lo, hi int
	params *paramNames
}

type paramNames struct {
	names []string
	next  *paramNames
}

func (p place) has(name string) bool {
	for n := p.params; n != nil; n = n.next {
		if slices.Contains(n.names, name) {
			return true
		}
	}
	return false
}

// hidden is the place of a program that does not run, or not in the
// root context: its block parameters only.
func (p place) hidden() place { return place{lo: 1, hi: 0, params: p.params} }

// inner is the place of a program run in a new context (#each, #with).
func (p place) inner() place {
	if p.lo > p.hi {
		return p
	}
	return place{lo: p.lo + 1, hi: p.hi + 1, params: p.params}
}

// either is the place of a section's body: the same context or a new one.
func (p place) either() place {
	if p.lo > p.hi {
		return p
	}
	return place{lo: p.lo, hi: p.hi + 1, params: p.params}
}

// reachesRoot reports whether a path climbing depth contexts (../) from
// p may land on the root context.
func (p place) reachesRoot(depth int) bool {
	return p.lo <= depth && depth <= p.hi
}

type outliner struct {
	src       string
	unknown   []call
	vars      map[string]bool
	wholeRoot bool
}

func (w *outliner) program(prog *ast.Program, at place) {
	if prog == nil {
		return
	}
	if len(prog.BlockParams) > 0 {
		at.params = &paramNames{names: prog.BlockParams, next: at.params}
	}
	for _, n := range prog.Body {
		switch n := n.(type) {
		case *ast.MustacheStatement:
			w.expression(n.Expression, at, mustache, nil, nil)
		case *ast.BlockStatement:
			w.expression(n.Expression, at, block, n.Program, n.Inverse)
		case *ast.PartialStatement:
			if sub, ok := n.Name.(*ast.SubExpression); ok {
				// The name is evaluated, then the partial is missing:
				// its parameters are never read.
				w.expression(sub.Expression, at, subexpression, nil, nil)
			}
			w.params(n.Params, n.Hash, at.hidden())
		}
	}
}

// expression follows renderer.expression's classification.
func (w *outliner) expression(e *ast.Expression, at place, kind exprKind, fn, inverse *ast.Program) {
	if e == nil {
		return
	}
	path := literalPath(e.Path)
	simple := len(path.Parts) == 1 && !path.Scoped && path.Depth == 0
	isBlockParam := simple && !path.Data && at.has(path.Parts[0])
	hasArgs := len(e.Params) > 0 || e.Hash != nil || kind == subexpression
	helper := !isBlockParam && hasArgs
	eligible := !isBlockParam && (helper || simple)
	if eligible && !helper && builtins[path.Parts[0]] {
		helper = true
	}
	if !helper {
		w.value(path, at, kind != mustache)
		if kind == block {
			w.program(fn, at.either())
			w.program(inverse, at)
		}
		return
	}
	name := ""
	if len(path.Parts) > 0 {
		name = path.Parts[0]
	}
	w.params(e.Params, e.Hash, at)
	if !builtins[name] {
		pos := e.Path.Location().Pos
		if _, ok := e.Path.(*ast.StringLiteral); ok && pos > 0 {
			pos-- // the opening quote
		}
		w.unknown = append(w.unknown, call{name: path.Original, pos: min(max(pos, 0), len(w.src))})
		// Neither program runs; their helper calls are still calls.
		w.program(fn, at.hidden())
		w.program(inverse, at.hidden())
		return
	}
	// lookup, log and helperMissing run no program.
	fnAt, inverseAt := at.hidden(), at.hidden()
	switch name {
	case "if", "unless":
		fnAt, inverseAt = at, at
	case "with", "each":
		fnAt, inverseAt = at.inner(), at
	case "blockHelperMissing":
		fnAt, inverseAt = at.either(), at
	}
	switch name {
	case "with", "each", "blockHelperMissing", "lookup":
		if len(e.Params) > 0 {
			w.subject(e.Params[0], at)
		}
	}
	if kind == block {
		w.program(fn, fnAt)
		w.program(inverse, inverseAt)
	}
}

// params walks a helper's parameters and hash values.
func (w *outliner) params(params []ast.Node, hash *ast.Hash, at place) {
	for _, p := range params {
		w.param(p, at)
	}
	if hash != nil {
		for _, pair := range hash.Pairs {
			w.param(pair.Val, at)
		}
	}
}

// param follows renderer.param.
func (w *outliner) param(n ast.Node, at place) {
	switch n := n.(type) {
	case *ast.SubExpression:
		w.expression(n.Expression, at, subexpression, nil, nil)
	case *ast.Expression:
		w.expression(n, at, subexpression, nil, nil)
	case *ast.PathExpression:
		if !n.Data && !n.Scoped && n.Depth == 0 && len(n.Parts) == 1 && (n.Original == "null" || n.Original == "undefined") {
			return
		}
		w.value(unbracket(n), at, false)
	}
}

// subject notes a helper's first parameter that is the root context
// itself (#each this, lookup . "x").
func (w *outliner) subject(n ast.Node, at place) {
	if n == nil {
		return
	}
	if p, ok := n.(*ast.PathExpression); ok && w.isRoot(unbracket(p), at) {
		w.wholeRoot = true
	}
}

// isRoot reports whether path p may be the root context itself.
func (w *outliner) isRoot(p *ast.PathExpression, at place) bool {
	if p.Data {
		return len(p.Parts) == 1 && p.Parts[0] == "root"
	}
	return len(p.Parts) == 0 && at.reachesRoot(p.Depth)
}

// value notes the variable a path (unbracketed) reads, as renderer.path
// resolves it. whole: the root context itself would matter (a block's
// subject).
func (w *outliner) value(p *ast.PathExpression, at place, whole bool) {
	switch {
	case p.Data:
		if len(p.Parts) >= 2 && p.Parts[0] == "root" {
			w.vars[p.Parts[1]] = true
		}
	case len(p.Parts) > 0 && !p.Scoped && p.Depth == 0 && at.has(p.Parts[0]):
		// a block parameter
	case len(p.Parts) > 0 && at.reachesRoot(p.Depth):
		w.vars[p.Parts[0]] = true
	}
	if whole && w.isRoot(p, at) {
		w.wholeRoot = true
	}
}
