// Package durable holds what makes a file's new name survive a crash:
// after a rename or a link, the directory holding the name is synced.
package durable
