// Package blob keeps the rendered files of images (masters and
// renditions) behind one interface, Blobs, with two stores chosen by URL
// (New, OpenURL): the files store (Store, the default) on the origin's
// disk, one directory per image, every file written atomically
// (temporary file, fsync, rename, fsync of the directory); and the S3
// store, which keeps them in an S3-compatible bucket so that any origin
// serves any image.
//
// The S3 store records each object's SHA-256 and verifies it when an
// object is read whole (ErrCorrupt), streams open objects with ranged
// GETs instead of holding them in memory, and reports an unreachable or
// failing server as ErrUnavailable, which the origin answers with 503.
package blob
