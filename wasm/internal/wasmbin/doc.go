// Package wasmbin rewrites a WebAssembly binary for the sandbox's
// snapshots: it takes the active data segments out (the snapshot of
// memory replaces them) and exports every global (so that the host can
// restore them), leaving the code untouched.
package wasmbin
