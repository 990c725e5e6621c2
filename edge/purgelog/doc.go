// Package purgelog keeps an edge in step with the origins' purges: it holds
// one origin's event stream open at a time (origins over one store serve the
// same log), applies every purge to the cache once, acknowledges it, and
// remembers the last position on disk so that a restarted or disconnected
// edge replays what it missed, from whichever origin, before it serves again.
package purgelog
