package hbs

import (
	"fmt"

	"github.com/mailgun/raymond/v2/ast"
)

// Render renders t with the root context root, stopping with
// ErrOutputTooLarge once the output passes maxOutput bytes.
//
// The runtime follows handlebars.js 4.7's compiled templates and
// helpers (runtime.js, helpers/*.js, compiler.js): the same helper
// resolution, the same values passed as `this`, the same depth stack
// for ../ paths, the same data frames for @-paths.
func (t *Template) Render(root Value, maxOutput int) (out string, err error) {
	defer func() {
		if p := recover(); p != nil {
			a, ok := p.(abort)
			if !ok {
				panic(p)
			}
			out, err = "", a.err
		}
	}()
	r := &renderer{max: maxOutput, useDepths: t.useDepths, out: make([]byte, 0, min(t.sizeHint, maxOutput))}
	data := &frame{root: root, set: hasRoot}
	r.program(t.prog, root, data, nil, &scope{depths: &depth{v: root}})
	return string(r.out), nil
}

// abort unwinds a render from any depth.
type abort struct{ err error }

type renderer struct {
	out       []byte
	max       int
	useDepths bool // the template has ../ paths
}

func (r *renderer) fail(err error) { panic(abort{err}) }

func (r *renderer) grow(n int) {
	if len(r.out)+n > r.max {
		r.fail(fmt.Errorf("%w: more than %d bytes", ErrOutputTooLarge, r.max))
	}
}

func (r *renderer) write(s string) {
	r.grow(len(s))
	r.out = append(r.out, s...)
}

func (r *renderer) WriteString(s string) (int, error) {
	r.write(s)
	return len(s), nil
}

// writeValue appends v as handlebars.js appends a helper's or a path's
// result: nothing for null and undefined, String(v) otherwise, escaped
// for {{ }}.
func (r *renderer) writeValue(v Value, escaped bool) {
	switch v.kind {
	case Undefined, Null:
		return
	case String:
		if escaped && v.num != plainString {
			r.escape(v.str)
		} else {
			r.write(v.str)
		}
		return
	case Array:
		if !escaped {
			v.writeTo(r)
			return
		}
	}
	if escaped {
		r.escape(v.toString())
	} else {
		r.write(v.toString())
	}
}

// escapes maps the bytes handlebars.js's escapeExpression replaces.
var escapes = [256]string{
	'&': "&amp;", '<': "&lt;", '>': "&gt;", '"': "&quot;",
	'\'': "&#x27;", '`': "&#x60;", '=': "&#x3D;",
}

// escape is handlebars.js's escapeExpression. The limit is checked once
// per string: the output passes it by at most one escaped string.
func (r *renderer) escape(s string) {
	out := r.out
	start := 0
	for i := 0; i < len(s); i++ {
		if rep := escapes[s[i]]; rep != "" {
			out = append(out, s[start:i]...)
			out = append(out, rep...)
			start = i + 1
		}
	}
	r.out = append(out, s[start:]...)
	if len(r.out) > r.max {
		r.fail(fmt.Errorf("%w: more than %d bytes", ErrOutputTooLarge, r.max))
	}
}

// frame is a handlebars.js data frame (createFrame copies the parent's
// fields and links it as _parent).
type frame struct {
	root, key, index, first, last Value
	set                           uint8
	parent                        *frame
}

const (
	hasRoot = 1 << iota
	hasKey
	hasIndex
	hasFirst
	hasLast
)

func (f *frame) child() *frame {
	c := *f
	c.parent = f
	return &c
}

func (f *frame) get(name string) Value {
	switch {
	case name == "root" && f.set&hasRoot != 0:
		return f.root
	case name == "key" && f.set&hasKey != 0:
		return f.key
	case name == "index" && f.set&hasIndex != 0:
		return f.index
	case name == "first" && f.set&hasFirst != 0:
		return f.first
	case name == "last" && f.set&hasLast != 0:
		return f.last
	}
	return undefined
}

// depth is handlebars.js's depths array as a list: v is depths[0].
type depth struct {
	v    Value
	next *depth
}

// scope is what a running program sees.
type scope struct {
	ctx    Value
	data   *frame
	depths *depth
	params *blockParams
}

// blockParams is one program's `as |a b|` names and the values its
// helper passed.
type blockParams struct {
	names []string
	vals  []Value
	next  *blockParams
}

func (s *scope) blockParam(name string) (Value, bool) {
	for p := s.params; p != nil; p = p.next {
		for i, n := range p.names {
			if n == name {
				if i < len(p.vals) {
					return p.vals[i], true
				}
				return undefined, true
			}
		}
	}
	return undefined, false
}

// this is the `this` handlebars.js gives helpers: the context, or the
// null context when it is null or undefined.
func (s *scope) this() Value {
	if s.ctx.isNullish() {
		return nullCtx
	}
	return s.ctx
}

// program runs prog as handlebars.js's wrapProgram does: a context that
// differs (JavaScript !=) from the current one becomes a new depth.
func (r *renderer) program(prog *ast.Program, ctx Value, data *frame, bp []Value, parent *scope) {
	if prog == nil {
		return
	}
	s := &scope{ctx: ctx, data: data, depths: parent.depths, params: parent.params}
	if d := parent.depths; r.useDepths && (!looseEqual(ctx, d.v) && !(ctx.kind == nullContext && d.v.kind == Null)) {
		s.depths = &depth{v: ctx, next: parent.depths}
	}
	if len(prog.BlockParams) > 0 {
		s.params = &blockParams{names: prog.BlockParams, vals: bp, next: parent.params}
	}
	for _, n := range prog.Body {
		r.statement(n, s)
	}
}

func (r *renderer) statement(n ast.Node, s *scope) {
	switch n := n.(type) {
	case *ast.ContentStatement:
		r.write(n.Value)
	case *ast.CommentStatement:
	case *ast.MustacheStatement:
		v := r.expression(n.Expression, s, nil, nil, mustache)
		r.writeValue(v, !n.Unescaped)
	case *ast.BlockStatement:
		v := r.expression(n.Expression, s, n.Program, n.Inverse, block)
		r.writeValue(v, false)
	case *ast.PartialStatement:
		name := "undefined"
		switch p := n.Name.(type) {
		case *ast.SubExpression:
			name = r.expression(p.Expression, s, nil, nil, subexpression).toPropertyKey()
		default:
			name = literalPath(p).Original
		}
		r.fail(renderErrorf("The partial %s could not be found", name))
	default:
		r.fail(renderErrorf("unsupported statement %T", n))
	}
}

// builtins are handlebars.js's knownHelpers.
var builtins = map[string]bool{
	"helperMissing": true, "blockHelperMissing": true, "each": true, "if": true,
	"unless": true, "with": true, "log": true, "lookup": true,
}

// literalPath is handlebars.js's transformLiteralToPath: a literal
// helper name is the path of its string form.
func literalPath(n ast.Node) *ast.PathExpression {
	var s string
	switch n := n.(type) {
	case *ast.PathExpression:
		return unbracket(n)
	case *ast.StringLiteral:
		s = n.Value
	case *ast.NumberLiteral:
		s = formatNumber(n.Value)
	case *ast.BooleanLiteral:
		s = "false"
		if n.Value {
			s = "true"
		}
	default:
		return &ast.PathExpression{}
	}
	return &ast.PathExpression{Original: s, Parts: []string{s}}
}

// exprKind is where an expression stands.
type exprKind uint8

const (
	mustache exprKind = iota
	block
	subexpression
)

// expression evaluates a mustache, a block (fn and inverse its
// programs) or a subexpression, classified as handlebars.js's compiler
// does: a helper call, an ambiguous name (a helper or a value) or a
// simple path. A subexpression is always a helper call.
func (r *renderer) expression(e *ast.Expression, s *scope, fn, inverse *ast.Program, kind exprKind) Value {
	path := literalPath(e.Path)
	simple := len(path.Parts) == 1 && !path.Scoped && path.Depth == 0
	isBlockParam := false
	if simple && !path.Data {
		_, isBlockParam = s.blockParam(path.Parts[0])
	}
	hasArgs := len(e.Params) > 0 || e.Hash != nil || kind == subexpression
	helper := !isBlockParam && hasArgs
	eligible := !isBlockParam && (helper || simple)
	if eligible && !helper && builtins[path.Parts[0]] {
		helper = true
	}
	if helper {
		name := ""
		if len(path.Parts) > 0 {
			name = path.Parts[0]
		}
		params := make([]Value, len(e.Params))
		for i, p := range e.Params {
			params[i] = r.param(p, s)
		}
		includeZero := false
		if e.Hash != nil {
			for _, p := range e.Hash.Pairs {
				v := r.param(p.Val, s)
				if p.Key == "includeZero" {
					includeZero = v.truthy()
				}
			}
		}
		if !builtins[name] {
			// (helpers.name || value || helperMissing).call(...): a
			// value is not a function; helperMissing throws only when
			// given parameters.
			if r.path(path, s).truthy() {
				r.fail(renderErrorf("%s is not a function", path.Original))
			}
			if len(params) > 0 {
				r.fail(renderErrorf("Missing helper: %q", path.Original))
			}
			return undefined
		}
		if kind != block {
			switch name {
			case "if", "unless", "with", "each", "blockHelperMissing":
				// options.fn and options.inverse are undefined outside
				// blocks, and each of these calls one of them.
				r.fail(renderErrorf("%s outside a block: fn is not a function", name))
			}
		}
		return r.helper(name, params, includeZero, s, fn, inverse)
	}
	v := r.path(path, s)
	if kind != block {
		return v
	}
	return r.blockHelperMissing(v, s, fn, inverse)
}

// param evaluates a helper's parameter or hash value.
func (r *renderer) param(n ast.Node, s *scope) Value {
	switch n := n.(type) {
	case *ast.StringLiteral:
		return stringValue(n.Value)
	case *ast.NumberLiteral:
		return numberValue(n.Value)
	case *ast.BooleanLiteral:
		return boolValue(n.Value)
	case *ast.SubExpression:
		return r.expression(n.Expression, s, nil, nil, subexpression)
	case *ast.PathExpression:
		// handlebars.js lexes null and undefined as literals; raymond
		// as names.
		if !n.Data && !n.Scoped && n.Depth == 0 && len(n.Parts) == 1 {
			switch n.Original {
			case "null":
				return null
			case "undefined":
				return undefined
			}
		}
		return r.path(unbracket(n), s)
	case *ast.Expression:
		return r.expression(n, s, nil, nil, subexpression)
	}
	r.fail(renderErrorf("unsupported parameter %T", n))
	return undefined
}

// path resolves a path as the compiled template does: a block
// parameter, a data (@) path through the frames, or a context path
// from depths[n]; each further part is an own-property lookup, stopping
// at null or undefined.
func (r *renderer) path(p *ast.PathExpression, s *scope) Value {
	parts := p.Parts
	var v Value
	switch {
	case p.Data:
		f := s.data
		for i := 0; i < p.Depth && f != nil; i++ {
			f = f.parent
		}
		if f == nil || len(parts) == 0 {
			return undefined
		}
		v, parts = f.get(parts[0]), parts[1:]
	default:
		if len(parts) > 0 && !p.Scoped && p.Depth == 0 {
			if bv, ok := s.blockParam(parts[0]); ok {
				v, parts = bv, parts[1:]
				break
			}
		}
		d := s.depths
		if p.Depth == 0 {
			v = s.ctx
		} else {
			for i := 0; i < p.Depth && d != nil; i++ {
				d = d.next
			}
			if d == nil {
				return undefined
			}
			v = d.v
		}
	}
	for _, part := range parts {
		if v.isNullish() {
			return v
		}
		v = v.property(part)
	}
	return v
}

// helper calls a built-in helper (handlebars.js's helpers/*.js).
func (r *renderer) helper(name string, params []Value, includeZero bool, s *scope, fn, inverse *ast.Program) Value {
	empty := stringValue("")
	switch name {
	case "if", "unless":
		if len(params) != 1 {
			r.fail(renderErrorf("#%s requires exactly one argument", name))
		}
		c := params[0]
		cond := !((!includeZero && !c.truthy()) || c.isEmpty())
		if name == "unless" {
			cond = !cond
		}
		if cond {
			r.program(fn, s.this(), s.data, nil, s)
		} else {
			r.program(inverse, s.this(), s.data, nil, s)
		}
		return empty
	case "with":
		if len(params) != 1 {
			r.fail(renderErrorf("#with requires exactly one argument"))
		}
		if c := params[0]; !c.isEmpty() {
			var bp []Value
			if fn != nil && len(fn.BlockParams) > 0 {
				bp = []Value{c}
			}
			r.program(fn, c, s.data, bp, s)
		} else {
			r.program(inverse, s.this(), s.data, nil, s)
		}
		return empty
	case "each":
		if len(params) != 1 {
			r.fail(renderErrorf("Must pass iterator to #each"))
		}
		r.each(params[0], s, fn, inverse)
		return empty
	case "lookup":
		if len(params) == 0 {
			r.fail(renderErrorf("lookup requires an object and a field"))
		}
		if !params[0].truthy() {
			return params[0]
		}
		if len(params) != 2 {
			r.fail(renderErrorf("lookup requires an object and a field"))
		}
		return params[0].property(params[1].toPropertyKey())
	case "log":
		return undefined
	case "helperMissing":
		if len(params) > 0 {
			r.fail(renderErrorf("Missing helper: %q", name))
		}
		return undefined
	case "blockHelperMissing":
		if len(params) != 1 {
			r.fail(renderErrorf("blockHelperMissing requires exactly one argument"))
		}
		return r.blockHelperMissing(params[0], s, fn, inverse)
	}
	r.fail(renderErrorf("Missing helper: %q", name))
	return undefined
}

// blockHelperMissing renders a block whose name is a value, not a
// helper: a section, as in Mustache.
func (r *renderer) blockHelperMissing(v Value, s *scope, fn, inverse *ast.Program) Value {
	switch {
	case v.kind == Bool && v.num != 0:
		r.program(fn, s.this(), s.data, nil, s)
	case v.kind == Bool || v.isNullish():
		r.program(inverse, s.this(), s.data, nil, s)
	case v.kind == Array:
		if len(v.arr.elems) > 0 {
			r.each(v, s, fn, inverse)
		} else {
			r.program(inverse, s.this(), s.data, nil, s)
		}
	default:
		r.program(fn, v, s.data, nil, s)
	}
	return stringValue("")
}

// each is the #each helper: arrays by index, objects by own keys in
// JavaScript order, with @index, @key, @first and @last in a new frame;
// the inverse when nothing was iterated.
func (r *renderer) each(v Value, s *scope, fn, inverse *ast.Program) {
	f := s.data.child()
	f.set |= hasKey | hasIndex | hasFirst | hasLast
	n := 0
	wantBP := fn != nil && len(fn.BlockParams) > 0
	var bp []Value
	switch v.kind {
	case Array:
		for i, e := range v.arr.elems {
			f.key, f.index = numberValue(float64(i)), numberValue(float64(i))
			f.first, f.last = boolValue(i == 0), boolValue(i == len(v.arr.elems)-1)
			if wantBP {
				bp = []Value{e, f.key}
			}
			r.program(fn, e, f, bp, s)
			n++
		}
	case Object, nullContext:
		o := v.obj
		for i, k := range o.keys {
			f.key, f.index = stringValue(k), numberValue(float64(i))
			f.first, f.last = boolValue(i == 0), boolValue(i == len(o.keys)-1)
			if wantBP {
				bp = []Value{o.vals[i], f.key}
			}
			r.program(fn, o.vals[i], f, bp, s)
			n++
		}
	}
	if n == 0 {
		r.program(inverse, s.this(), s.data, nil, s)
	}
}

// unbracket strips the brackets of literal segments ([first name]) as
// handlebars.js's parser does; raymond keeps them.
func unbracket(p *ast.PathExpression) *ast.PathExpression {
	for i, part := range p.Parts {
		if len(part) >= 2 && part[0] == '[' && part[len(part)-1] == ']' {
			q := *p
			q.Parts = make([]string, len(p.Parts))
			for j, part := range p.Parts {
				if len(part) >= 2 && part[0] == '[' && part[len(part)-1] == ']' {
					part = part[1 : len(part)-1]
				}
				q.Parts[j] = part
			}
			_ = i
			return &q
		}
	}
	return p
}
