// Package abi is the contract between the sandbox's host (package wasm)
// and its guest (wasm/guest): the guest's exported functions and the
// status codes they return.
//
// Protocol, one evaluation per instance: the host calls Alloc(n) and
// writes the template (or the template's compiled program, with
// FlagProgram) followed by the values at the returned address, then
// Check or Render with the lengths, limits and flags. The guest answers
// a Status and leaves its result at Result (address<<32 | length): the
// output for StatusOK, for StatusSyntax a SyntaxResult, for the other
// errors a message. With FlagEmitProgram, once the template parsed, the
// guest also leaves its compiled program at Program (a length of 0 when
// it did not parse); the host caches it and passes it back, with
// FlagProgram, instead of the template, and the guest decodes it as
// untrusted input (StatusProgram when it is not a valid program).
package abi
