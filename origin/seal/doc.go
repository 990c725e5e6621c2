// Package seal keeps secrets at rest: it loads or creates the master key
// and seals values with AES-256-GCM under a key derived from it with HKDF,
// prefixing each value with its format and the id of the master key that
// sealed it. The master key itself is only HKDF input: for the sealing key
// and for the MAC keys of opaque tokens such as pagination cursors.
//
// A Box holds the current master key, which seals and signs, and may hold
// previous ones (PICTOR_MASTER_KEY_PREVIOUS, master.key.previous) and next
// ones (PICTOR_MASTER_KEY_NEXT), which still open and verify: that is how a
// master key is replaced without downtime. A value names its key, so
// opening it takes one decryption.
// Values sealed under a previous key, before the key id (format v1) or
// before the key was derived (AES-GCM directly under the master key, no
// prefix) still open; Box.OpenUpgrade also returns them sealed under the
// current key in the current format, for the caller to write back.
package seal
