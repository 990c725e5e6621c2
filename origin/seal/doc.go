// Package seal keeps secrets at rest: it loads or creates the master key
// and seals values with AES-256-GCM under a key derived from it with HKDF,
// prefixing each value with its format and the id of the master key that
// sealed it. The master key itself is only HKDF input: for the sealing key
// and for the MAC keys of opaque tokens such as pagination cursors.
//
// Details: docs/internals.md, "origin/seal".
package seal
