package wasm

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"

	"github.com/pictorhq/pictor/wasm/internal/hbs"
)

// Helpers returns the names of the Handlebars helpers the sandbox
// provides, sorted: handlebars.js's built-in helpers, the runtime's own
// list (the evaluator hands any other name back to the Go guest, which
// fails the render).
func Helpers() []string { return hbs.Helpers() }

// HelperCall is a template's call of a helper the sandbox does not
// provide. Line and Column (in characters) are 1-based and point at the
// helper's name.
type HelperCall struct {
	Name   string
	Line   int
	Column int
}

// Outline is what a template refers to, read from its syntax tree.
type Outline struct {
	// UnknownHelpers are the calls (a mustache or a block with
	// parameters or a hash, any subexpression) of helpers the sandbox
	// does not provide, in source order, rendered branches or not. Such
	// a call fails the render, or renders nothing.
	UnknownHelpers []HelperCall
	// Variables are the names the template reads from the top level of
	// its values, sorted: the first part of every path evaluated in the
	// root context (the top level, #if, #unless and {{else}} bodies,
	// sections), of ../ paths climbing back to it and of @root paths;
	// not the names read inside #each and #with, which have their own
	// context.
	Variables []string
}

// Outline parses template with the sandbox's parser, natively in the
// host, and reads its syntax tree. Its errors are Check's for a template
// that does not parse (*SyntaxError, ErrTooDeep, ErrTemplateTooLarge).
//
// The host parses without the sandbox's deadline and memory limit:
// outline templates that Check accepted (it bounds their size and
// nesting, and the parser is linear in the template). Outlines are kept
// by the template's SHA-256 (outlineCacheBytes), so that a template is
// parsed in the host once while it is in use.
func (e *Engine) Outline(template string) (*Outline, error) {
	if len(template) > e.cfg.MaxTemplateBytes {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrTemplateTooLarge, len(template), e.cfg.MaxTemplateBytes)
	}
	key := sha256.Sum256([]byte(template))
	if out, ok := e.outlines.get(key); ok {
		return out.clone(), nil
	}
	out, err := outline(template, e.cfg.MaxDepth)
	if err != nil {
		return nil, err
	}
	e.outlines.add(key, out)
	return out.clone(), nil
}

func outline(template string, maxDepth int) (out *Outline, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("%w: the host's parser: %v", ErrGuest, p)
		}
	}()
	o, err := hbs.OutlineOf(template, maxDepth)
	if err != nil {
		var se *hbs.SyntaxError
		switch {
		case errors.As(err, &se):
			return nil, &SyntaxError{Line: se.Line, Column: se.Column, Message: se.Message}
		case errors.Is(err, hbs.ErrTooDeep):
			return nil, fmt.Errorf("%w: %v", ErrTooDeep, err)
		}
		return nil, fmt.Errorf("%w: %v", ErrGuest, err)
	}
	out = &Outline{Variables: o.Variables}
	for _, c := range o.Unknown {
		out.UnknownHelpers = append(out.UnknownHelpers, HelperCall{Name: c.Name, Line: c.Line, Column: c.Column})
	}
	return out, nil
}

func (o *Outline) clone() *Outline {
	return &Outline{UnknownHelpers: slices.Clone(o.UnknownHelpers), Variables: slices.Clone(o.Variables)}
}

// size is about what o holds in memory.
func (o *Outline) size() int {
	n := 64
	for _, c := range o.UnknownHelpers {
		n += 40 + len(c.Name)
	}
	for _, v := range o.Variables {
		n += 16 + len(v)
	}
	return n
}

// outlineCacheBytes bounds the outlines kept.
const outlineCacheBytes = 4 << 20

// newOutlineCache keeps up to outlineCacheBytes of outlines.
func newOutlineCache() *sizedLRU[*Outline] {
	return newSizedLRU(outlineCacheBytes, (*Outline).size)
}
