// Package blob keeps rendered files on the origin's disk: one directory per
// image, every file written atomically (temporary file, fsync, rename, fsync
// of the directory) so a reader never sees half a file and an acknowledged
// write survives a crash.
package blob
