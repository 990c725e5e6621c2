// Package seal keeps secrets at rest: it loads or creates the master key
// and seals values with AES-256-GCM under a key derived from it with HKDF,
// prefixing each value with the format that says which key sealed it. The
// master key itself is only HKDF input: for the sealing key and for the MAC
// keys of opaque tokens such as pagination cursors.
//
// Values sealed before the key was derived (AES-GCM directly under the
// master key, no prefix) still open; Box.OpenUpgrade also returns them
// sealed in the current format, for the caller to write back.
package seal
