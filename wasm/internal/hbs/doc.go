// Package hbs is the Handlebars engine that runs inside the sandbox: the
// parser of github.com/mailgun/raymond/v2 (its lexer patched for speed,
// see wasm/internal/raymond) and a runtime that follows
// handlebars.js 4.7 (the reference) for the built-in helpers, lookups,
// escaping and the JavaScript rendering of JSON values.
//
// It has no build tags: the wasip1 guest (wasm/guest) wraps it, and the
// host's tests and benchmarks call it natively for comparison.
package hbs
