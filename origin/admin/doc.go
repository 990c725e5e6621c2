// Package admin carries the operator commands: create, list, suspend and
// resume organizations, change their plan, give one a new owner key, and
// back the data directory up (its archive format, verified before any
// restore writes a file, is here too). A running origin serves them on a
// loopback-only listener guarded by a token kept in the data directory
// (mode 0600); the CLI uses that endpoint when a server holds the store,
// and the store directly when none does.
package admin
