// Package abi is the contract between the sandbox's host (package wasm)
// and its guest (wasm/guest): the guest's exported functions and the
// status codes they return.
//
// Details: docs/internals.md, "wasm/internal/abi".
package abi
