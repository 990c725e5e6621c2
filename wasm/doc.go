// Package wasm is the template sandbox: the Handlebars guest compiled to
// WebAssembly and the wazero host that runs it with memory and time limits.
package wasm
