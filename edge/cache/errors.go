package cache

import "errors"

var (
	// ErrClosed reports a call on a closed cache.
	ErrClosed = errors.New("edge cache closed")
	// ErrInvalidEntry reports a key or entry Put refuses: an empty or
	// oversized key, a missing owner, a weak or unquoted ETag, a header value
	// with control characters.
	ErrInvalidEntry = errors.New("invalid cache entry")
	// ErrTooLarge reports an entry whose encoding exceeds
	// Config.MaxEntryBytes; the edge serves it without caching it.
	ErrTooLarge = errors.New("cache entry too large")
	// ErrPurged reports a Put dropped because a purge covering the entry ran
	// after the Epoch it was given: the content was fetched before its image,
	// organization or tag was purged. It is not a failure of the cache.
	ErrPurged = errors.New("cache entry purged while it was fetched")
	// ErrNotCacheDir reports a directory holding a pebble database that is
	// not an edge cache of this layout (the origin's store, say); Open
	// leaves it untouched.
	ErrNotCacheDir = errors.New("not an edge cache directory")
	// ErrCorrupt reports an L2 record whose checksum or structure is wrong.
	// Get never returns it (a corrupt entry is a miss); the decoders do.
	ErrCorrupt = errors.New("corrupt cache record")
)
