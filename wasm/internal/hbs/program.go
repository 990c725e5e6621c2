package hbs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/mailgun/raymond/v2/ast"
)

// A program is a parsed template in a compact binary form, so that a
// template is parsed once and each later evaluation only decodes it
// (the sandbox's host caches programs by the template's hash). It holds
// what Render uses of the syntax tree, whitespace control already
// applied. Whoever hands DecodeProgram a program is not trusted:
// DecodeProgram checks every length, count, tag and the nesting, and
// rejects what Encode could not have produced with ErrProgram.
//
// Layout: the magic, a flag byte (1: the template has ../ paths), the
// numbers of programs, contents, mustaches, blocks, expressions, paths,
// node slots (statements and parameters) and strings of block
// parameters and path parts (so that decoding allocates each kind
// once), then the root program. A node is a tag byte and its fields;
// counts and lengths are uvarints, strings are a length and bytes,
// numbers IEEE 754 bits little-endian followed by their JavaScript
// string (what wasm/evaluator writes; it cannot format floats).
const programMagic = "hbs\x01"

// ErrProgram reports a program DecodeProgram rejects.
var ErrProgram = errors.New("invalid compiled program")

const (
	tagProgram byte = iota + 1
	tagContent
	tagComment
	tagMustache
	tagBlock
	tagPartial
	tagExpression
	tagSubExpression
	tagPath
	tagString
	tagNumber
	tagBoolean
	tagNone // an absent optional node (program, inverse, hash)
)

// maxPathDepth bounds a path's ../ count in a decoded program.
const maxPathDepth = 1 << 20

// Encode appends t's program to b.
func (t *Template) Encode(b []byte) []byte {
	b = append(b, programMagic...)
	b = append(b, boolByte(t.useDepths))
	var c slabCounts
	c.walk(t.prog)
	for _, n := range c {
		b = binary.AppendUvarint(b, uint64(n))
	}
	return encodeProgram(b, t.prog)
}

// slabCounts: programs, contents, mustaches, blocks, expressions,
// paths, node slots, strings.
type slabCounts [8]int

func (c *slabCounts) walk(n ast.Node) {
	switch n := n.(type) {
	case *ast.Program:
		if n == nil {
			return
		}
		c[0]++
		c[6] += len(n.Body)
		c[7] += len(n.BlockParams)
		for _, s := range n.Body {
			c.walk(s)
		}
	case *ast.ContentStatement:
		c[1]++
	case *ast.MustacheStatement:
		c[2]++
		c.walk(n.Expression)
	case *ast.BlockStatement:
		c[3]++
		c.walk(n.Expression)
		c.walk(n.Program)
		c.walk(n.Inverse)
	case *ast.PartialStatement:
		c.walk(n.Name)
		c[6] += len(n.Params)
		for _, p := range n.Params {
			c.walk(p)
		}
		c.walk(n.Hash)
	case *ast.Expression:
		c[4]++
		c.walk(n.Path)
		c[6] += len(n.Params)
		for _, p := range n.Params {
			c.walk(p)
		}
		c.walk(n.Hash)
	case *ast.SubExpression:
		c.walk(n.Expression)
	case *ast.Hash:
		if n == nil {
			return
		}
		for _, p := range n.Pairs {
			c.walk(p.Val)
		}
	case *ast.PathExpression:
		c[5]++
		c[7] += len(n.Parts)
	}
}

func encodeString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func encodeProgram(b []byte, p *ast.Program) []byte {
	if p == nil {
		return append(b, tagNone)
	}
	b = append(b, tagProgram)
	b = binary.AppendUvarint(b, uint64(len(p.BlockParams)))
	for _, s := range p.BlockParams {
		b = encodeString(b, s)
	}
	b = binary.AppendUvarint(b, uint64(len(p.Body)))
	for _, n := range p.Body {
		b = encodeNode(b, n)
	}
	return b
}

func encodeExpression(b []byte, e *ast.Expression) []byte {
	b = encodeNode(b, e.Path)
	b = binary.AppendUvarint(b, uint64(len(e.Params)))
	for _, p := range e.Params {
		b = encodeNode(b, p)
	}
	return encodeHash(b, e.Hash)
}

func encodeHash(b []byte, h *ast.Hash) []byte {
	if h == nil {
		return append(b, tagNone)
	}
	b = append(b, 0)
	b = binary.AppendUvarint(b, uint64(len(h.Pairs)))
	for _, p := range h.Pairs {
		b = encodeString(b, p.Key)
		b = encodeNode(b, p.Val)
	}
	return b
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// encodeNode encodes the nodes raymond's parser produces; a node of
// another type would be a bug in this package, and panics.
func encodeNode(b []byte, n ast.Node) []byte {
	switch n := n.(type) {
	case *ast.Program:
		return encodeProgram(b, n)
	case *ast.ContentStatement:
		return encodeString(append(b, tagContent), n.Value)
	case *ast.CommentStatement:
		return append(b, tagComment)
	case *ast.MustacheStatement:
		b = append(b, tagMustache, boolByte(n.Unescaped))
		return encodeExpression(b, n.Expression)
	case *ast.BlockStatement:
		b = encodeExpression(append(b, tagBlock), n.Expression)
		b = encodeProgram(b, n.Program)
		return encodeProgram(b, n.Inverse)
	case *ast.PartialStatement:
		b = encodeNode(append(b, tagPartial), n.Name)
		b = binary.AppendUvarint(b, uint64(len(n.Params)))
		for _, p := range n.Params {
			b = encodeNode(b, p)
		}
		return encodeHash(b, n.Hash)
	case *ast.Expression:
		return encodeExpression(append(b, tagExpression), n)
	case *ast.SubExpression:
		return encodeExpression(append(b, tagSubExpression), n.Expression)
	case *ast.PathExpression:
		b = append(b, tagPath, boolByte(n.Data)|boolByte(n.Scoped)<<1)
		b = binary.AppendUvarint(b, uint64(n.Depth))
		b = encodeString(b, n.Original)
		b = binary.AppendUvarint(b, uint64(len(n.Parts)))
		for _, s := range n.Parts {
			b = encodeString(b, s)
		}
		return b
	case *ast.StringLiteral:
		return encodeString(append(b, tagString), n.Value)
	case *ast.NumberLiteral:
		b = binary.LittleEndian.AppendUint64(append(b, tagNumber), math.Float64bits(n.Value))
		return encodeString(b, formatNumber(n.Value))
	case *ast.BooleanLiteral:
		return append(b, tagBoolean, boolByte(n.Value))
	}
	panic(fmt.Sprintf("hbs: encode %T", n))
}

// DecodeProgram decodes a program produced by Encode. Its strings point
// into b, which must not change afterwards. Programs and subexpressions
// nested deeper than maxDepth+1 (more than Parse accepts) are
// ErrProgram, so that decoding and rendering recurse a bounded depth.
func DecodeProgram(b []byte, maxDepth int) (t *Template, err error) {
	if len(b) < len(programMagic) || string(b[:len(programMagic)]) != programMagic {
		return nil, fmt.Errorf("%w: bad magic", ErrProgram)
	}
	d := &progDecoder{b: b, pos: len(programMagic), maxDepth: maxDepth + 1}
	useDepths := d.flag()
	var c slabCounts
	total := 0
	for i := range c {
		c[i] = d.count()
		total += c[i]
	}
	// Every item counted takes at least a byte of its own.
	if d.err == nil && total > len(b)-d.pos {
		d.fail("%d items counted in %d bytes", total, len(b)-d.pos)
	}
	if d.err != nil {
		return nil, d.err
	}
	d.programs = make([]ast.Program, c[0])
	d.contents = make([]ast.ContentStatement, c[1])
	d.mustaches = make([]ast.MustacheStatement, c[2])
	d.blocks = make([]ast.BlockStatement, c[3])
	d.exprs = make([]ast.Expression, c[4])
	d.paths = make([]ast.PathExpression, c[5])
	d.nodes = make([]ast.Node, c[6])
	d.strs = make([]string, c[7])
	prog, ok := d.program(0)
	switch {
	case d.err != nil:
		return nil, d.err
	case !ok || prog == nil:
		return nil, fmt.Errorf("%w: no root program", ErrProgram)
	case d.pos != len(b):
		return nil, fmt.Errorf("%w: %d bytes after the program", ErrProgram, len(b)-d.pos)
	}
	return &Template{prog: prog, useDepths: useDepths, sizeHint: 2*len(b) + 1024}, nil
}

type progDecoder struct {
	b        []byte
	pos      int
	maxDepth int
	err      error

	// Slabs the nodes are taken from, sized by the header.
	programs  []ast.Program
	contents  []ast.ContentStatement
	mustaches []ast.MustacheStatement
	blocks    []ast.BlockStatement
	exprs     []ast.Expression
	paths     []ast.PathExpression
	nodes     []ast.Node
	strs      []string
}

// take returns a pointer to the next element of *slab, or to a spare
// one (and fails) when the header counted too few.
func take[T any](d *progDecoder, slab *[]T) *T {
	if len(*slab) == 0 {
		d.fail("more nodes than counted")
		return new(T)
	}
	p := &(*slab)[0]
	*slab = (*slab)[1:]
	return p
}

// takeN returns the next n elements of *slab.
func takeN[T any](d *progDecoder, slab *[]T, n int) []T {
	if n > len(*slab) {
		d.fail("more nodes than counted")
		return make([]T, n)
	}
	s := (*slab)[:n:n]
	*slab = (*slab)[n:]
	return s
}

func (d *progDecoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: at byte %d: %s", ErrProgram, d.pos, fmt.Sprintf(format, args...))
	}
}

func (d *progDecoder) byte() byte {
	if d.pos >= len(d.b) || d.err != nil {
		d.fail("truncated")
		return 0
	}
	c := d.b[d.pos]
	d.pos++
	return c
}

func (d *progDecoder) uvarint() uint64 {
	if d.pos < len(d.b) && d.b[d.pos] < 0x80 && d.err == nil {
		c := d.b[d.pos]
		d.pos++
		return uint64(c)
	}
	return d.uvarintSlow()
}

func (d *progDecoder) uvarintSlow() uint64 {
	if d.err != nil || d.pos >= len(d.b) {
		d.fail("bad varint")
		return 0
	}
	v, n := binary.Uvarint(d.b[d.pos:])
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.pos += n
	return v
}

// count reads a number of items, each at least one byte long: no more
// than the bytes left, so that a program cannot make the decoder
// allocate more than its own size.
func (d *progDecoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)-d.pos) {
		d.fail("count %d past the end", n)
		return 0
	}
	return int(n)
}

func (d *progDecoder) string() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)-d.pos) {
		d.fail("string of %d bytes past the end", n)
		return ""
	}
	s := d.b[d.pos : d.pos+int(n)]
	d.pos += int(n)
	if len(s) == 0 {
		return ""
	}
	return unsafe.String(&s[0], len(s))
}

func (d *progDecoder) flag() bool {
	switch d.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	d.fail("bad flag")
	return false
}

// program decodes an optional program: (nil, true) when absent.
func (d *progDecoder) program(depth int) (*ast.Program, bool) {
	switch d.byte() {
	case tagNone:
		return nil, true
	case tagProgram:
	default:
		d.fail("expected a program")
		return nil, false
	}
	if depth >= d.maxDepth {
		d.fail("programs nest deeper than %d", d.maxDepth)
		return nil, false
	}
	p := take(d, &d.programs)
	if n := d.count(); n > 0 {
		p.BlockParams = takeN(d, &d.strs, n)
		for i := range p.BlockParams {
			p.BlockParams[i] = d.string()
		}
	}
	p.Body = takeN(d, &d.nodes, d.count())
	for i := range p.Body {
		p.Body[i] = d.statement(depth + 1)
		if d.err != nil {
			return nil, false
		}
	}
	return p, d.err == nil
}

func (d *progDecoder) statement(depth int) ast.Node {
	switch tag := d.byte(); tag {
	case tagContent:
		c := take(d, &d.contents)
		c.Value = d.string()
		return c
	case tagComment:
		return &ast.CommentStatement{}
	case tagMustache:
		m := take(d, &d.mustaches)
		m.Unescaped = d.flag()
		m.Expression = d.expression(depth)
		return m
	case tagBlock:
		bs := take(d, &d.blocks)
		bs.Expression = d.expression(depth)
		bs.Program, _ = d.program(depth)
		bs.Inverse, _ = d.program(depth)
		return bs
	case tagPartial:
		ps := &ast.PartialStatement{}
		switch tag := d.byte(); tag {
		case tagPath:
			ps.Name = d.path()
		case tagSubExpression:
			ps.Name = d.subExpression(depth)
		default:
			d.fail("bad partial name")
		}
		ps.Params = d.params(depth)
		ps.Hash = d.hash(depth)
		return ps
	}
	d.fail("expected a statement")
	return nil
}

func (d *progDecoder) expression(depth int) *ast.Expression {
	e := take(d, &d.exprs)
	switch tag := d.byte(); tag {
	case tagPath:
		e.Path = d.path()
	case tagString, tagNumber, tagBoolean:
		e.Path = d.literal(tag)
	default:
		d.fail("bad expression head")
		return e
	}
	e.Params = d.params(depth)
	e.Hash = d.hash(depth)
	return e
}

func (d *progDecoder) subExpression(depth int) *ast.SubExpression {
	if depth >= d.maxDepth {
		d.fail("subexpressions nest deeper than %d", d.maxDepth)
		return &ast.SubExpression{Expression: &ast.Expression{}}
	}
	return &ast.SubExpression{Expression: d.expression(depth + 1)}
}

func (d *progDecoder) params(depth int) []ast.Node {
	n := d.count()
	if n == 0 {
		return nil
	}
	ps := takeN(d, &d.nodes, n)
	for i := range ps {
		ps[i] = d.value(depth)
		if d.err != nil {
			return nil
		}
	}
	return ps
}

func (d *progDecoder) hash(depth int) *ast.Hash {
	switch d.byte() {
	case tagNone:
		return nil
	case 0:
	default:
		d.fail("bad hash")
		return nil
	}
	n := d.count()
	h := &ast.Hash{Pairs: make([]*ast.HashPair, 0, n)}
	for range n {
		k := d.string()
		v := d.value(depth)
		if d.err != nil {
			return nil
		}
		h.Pairs = append(h.Pairs, &ast.HashPair{Key: k, Val: v})
	}
	return h
}

// value decodes a parameter or a hash value.
func (d *progDecoder) value(depth int) ast.Node {
	switch tag := d.byte(); tag {
	case tagPath:
		return d.path()
	case tagString, tagNumber, tagBoolean:
		return d.literal(tag)
	case tagSubExpression:
		return d.subExpression(depth)
	case tagExpression:
		if depth >= d.maxDepth {
			d.fail("expressions nest deeper than %d", d.maxDepth)
			return nil
		}
		return d.expression(depth + 1)
	}
	d.fail("expected a value")
	return nil
}

func (d *progDecoder) path() *ast.PathExpression {
	flags := d.byte()
	if flags > 3 {
		d.fail("bad path flags")
	}
	p := take(d, &d.paths)
	p.Data, p.Scoped = flags&1 != 0, flags&2 != 0
	depth := d.uvarint()
	if depth > maxPathDepth {
		d.fail("path depth %d", depth)
	}
	p.Depth = int(depth)
	p.Original = d.string()
	if n := d.count(); n > 0 {
		p.Parts = takeN(d, &d.strs, n)
		for i := range p.Parts {
			p.Parts[i] = d.string()
		}
	}
	return p
}

func (d *progDecoder) literal(tag byte) ast.Node {
	switch tag {
	case tagString:
		return &ast.StringLiteral{Value: d.string()}
	case tagNumber:
		if len(d.b)-d.pos < 8 {
			d.fail("truncated number")
			return &ast.NumberLiteral{}
		}
		f := math.Float64frombits(binary.LittleEndian.Uint64(d.b[d.pos:]))
		d.pos += 8
		d.string() // its JavaScript string, for the C evaluator
		return &ast.NumberLiteral{Value: f}
	}
	return &ast.BooleanLiteral{Value: d.flag()}
}
