package hbs

import (
	"errors"
	"fmt"
)

var (
	// ErrTooDeep reports a template or values nested deeper than the
	// limit.
	ErrTooDeep = errors.New("nested too deeply")
	// ErrOutputTooLarge reports a render whose output passed the limit.
	ErrOutputTooLarge = errors.New("output too large")
)

// SyntaxError is a template that does not parse. Line and Column are
// 1-based; Column counts characters (runes).
type SyntaxError struct {
	Line, Column int
	Message      string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Message)
}

// RenderError is an error handlebars.js throws while rendering: a
// missing helper or partial, a built-in helper with the wrong arguments.
type RenderError struct {
	Message string
}

func (e *RenderError) Error() string { return e.Message }

func renderErrorf(format string, args ...any) *RenderError {
	return &RenderError{Message: fmt.Sprintf(format, args...)}
}
