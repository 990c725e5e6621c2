package wasm

import (
	"errors"
	"fmt"
)

// Errors of an evaluation. All but ErrGuest and ErrClosed are the
// template's or the values' fault (the API answers 4xx); match them with
// errors.Is, and a *SyntaxError with errors.As.
var (
	// ErrTimeout: the evaluation ran past Config.Timeout (a template
	// that loops, such as nested #each over large arrays).
	ErrTimeout = errors.New("template evaluation timed out")
	// ErrMemory: the guest ran out of its Config.MemoryLimitBytes.
	ErrMemory = errors.New("template evaluation ran out of memory")
	// ErrTooDeep: the template or the values nest deeper than
	// Config.MaxDepth.
	ErrTooDeep = errors.New("template or values nested too deeply")
	// ErrOutputTooLarge: the output passed Config.MaxOutputBytes.
	ErrOutputTooLarge = errors.New("template output too large")
	// ErrTemplateTooLarge: the template is longer than
	// Config.MaxTemplateBytes.
	ErrTemplateTooLarge = errors.New("template too large")
	// ErrValuesTooLarge: the values are longer than
	// Config.MaxValuesBytes.
	ErrValuesTooLarge = errors.New("template values too large")
	// ErrValues: the values are not a JSON object.
	ErrValues = errors.New("template values are not a JSON object")
	// ErrRender: an error handlebars.js raises while rendering, such as
	// a missing helper or partial, or #if without its argument. The
	// wrapped message says which.
	ErrRender = errors.New("template render error")

	// ErrGuest: the guest failed in a way no template should cause (a
	// bug: the API answers 5xx).
	ErrGuest = errors.New("template sandbox failure")
	// ErrClosed: the Engine was closed.
	ErrClosed = errors.New("template engine closed")
)

// SyntaxError is a template that does not parse. Line and Column are
// 1-based; Column counts characters.
type SyntaxError struct {
	Line    int
	Column  int
	Message string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("template syntax error at line %d, column %d: %s", e.Line, e.Column, e.Message)
}
