// Package cursor makes opaque, tamper-evident pagination tokens. A token
// holds a position in a list and a MAC that binds it to its scope (the
// organization and the list), so a forged or foreign token is rejected.
package cursor
