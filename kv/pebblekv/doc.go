// Package pebblekv implements kv.Store on an embedded pebble database. It is
// Pictor's default store: one directory, writes synced before they are
// acknowledged, and an exclusive lock so a second process gets kv.ErrLocked
// instead of corrupting the data.
package pebblekv
