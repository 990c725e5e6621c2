// Package admin carries the operator commands (create, suspend and resume an
// organization). A running origin serves them on a loopback-only listener
// guarded by a token kept in the data directory (mode 0600); the CLI uses
// that endpoint when a server holds the store, and the store directly when
// none does.
package admin
