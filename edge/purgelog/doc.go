// Package purgelog keeps an edge in step with the origin's purges: it holds the
// origin's event stream open, applies every purge to the cache, acknowledges
// it, and remembers the last position on disk so that a restarted or
// disconnected edge replays what it missed before it serves again.
package purgelog
