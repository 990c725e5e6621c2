package cache

import (
	"fmt"
	"math"
	"net/http"
	"time"
	"unsafe"
)

// Entry is one cached response. Entries returned by Get are shared between
// goroutines and immutable: never modify one, its Body or the slices its
// methods return.
type Entry struct {
	// Body is the response body. It is nil in an entry Get found in L2 and
	// left there: Len is its length, and Cache.OpenBody (to send it) or
	// Cache.ReadBody (to use it) reach it.
	Body        []byte
	ContentType string
	// ETag is a strong, quoted entity tag: "abc", never W/"abc".
	ETag string
	// LastModified may be zero, in which case LastModifiedBytes is nil.
	LastModified time.Time
	// StoredAt is when Put stored the entry; Put sets it when it is zero.
	StoredAt time.Time
	// OrgID is required; PurgeOrg (suspension) drops by it.
	OrgID string
	// ImageID and Tag are what PurgeImage and PurgeTag drop by; an entry
	// needs at least one of them. Tag holds one or more tags separated by
	// spaces (a signed template URL's is its template and its signing key):
	// PurgeTag of any of them drops the entry.
	ImageID string
	Tag     string

	// FreshUntil is when the entry is due for a recheck with the origin (an
	// OG image, whose page may change); past it the edge still serves it,
	// stale, while it revalidates. Zero for an entry that never goes stale:
	// images are immutable. The fields below need it.
	FreshUntil time.Time
	// StaleWhileRevalidate is the origin's stale-while-revalidate, for the
	// Cache-Control the edge sends; Put keeps whole seconds.
	StaleWhileRevalidate time.Duration
	// Validator is the origin's entity tag to revalidate with, when it is
	// not ETag (an image the edge fitted to a platform's size has its own);
	// "" means ETag.
	Validator string

	// Set by the cache on the copies it stores.
	key      []byte // the cache key, verified on every L1 hit
	ct, etag []byte // ready-to-write header values
	lastMod  []byte // LastModified in http.TimeFormat, nil when zero
	ref      uint32 // second-chance bit of the L2 eviction queue
	cost     int64  // L1 cost in bytes

	// The body's file in L2, its length and its crc32c; onDisk when Body is
	// not in memory.
	file   uint64
	size   int
	sum    uint32
	onDisk bool
}

// Len returns the body's length, in memory or on disk.
func (e *Entry) Len() int {
	if e.onDisk {
		return e.size
	}
	return len(e.Body)
}

// OnDisk reports whether the body is in L2 only (Body is nil).
func (e *Entry) OnDisk() bool { return e.onDisk }

// Ready-to-write header values of an entry returned by Get, for a hit path
// that copies bytes instead of formatting (fasthttp's SetContentTypeBytes,
// SetCanonical). They are nil on an Entry that did not come from the cache.

// ContentTypeBytes returns the Content-Type value.
func (e *Entry) ContentTypeBytes() []byte { return e.ct }

// ETagBytes returns the ETag value, quotes included, for the header and for
// comparing with If-None-Match.
func (e *Entry) ETagBytes() []byte { return e.etag }

// LastModifiedBytes returns the Last-Modified value in http.TimeFormat, or
// nil when LastModified is zero.
func (e *Entry) LastModifiedBytes() []byte { return e.lastMod }

// MaxKeyLen bounds a cache key: an OG image's holds a page path of up to
// 2 KiB as sent. Put refuses a longer one and Get misses it.
const MaxKeyLen = 4096

// Size limits of the fields an entry carries into HTTP headers and indexes.
const (
	maxKeyLen     = MaxKeyLen
	maxHeaderLen  = 255 // ContentType, ETag, Validator
	maxStaleSecs  = math.MaxUint32
	maxIDLen      = 255 // OrgID, ImageID, Tag
	httpDateLen   = len(http.TimeFormat)
	entryOverhead = int64(unsafe.Sizeof(Entry{})) + 3*16 // struct and allocation headers
)

func validKey(key []byte) bool { return len(key) > 0 && len(key) <= maxKeyLen }

// validate checks what a cached entry will write into headers and indexes.
func (e *Entry) validate() error {
	if e.OrgID == "" {
		return fmt.Errorf("%w: no OrgID", ErrInvalidEntry)
	}
	if e.ImageID == "" && e.Tag == "" {
		return fmt.Errorf("%w: neither ImageID nor Tag", ErrInvalidEntry)
	}
	for _, f := range [...]struct{ name, v string }{{"OrgID", e.OrgID}, {"ImageID", e.ImageID}, {"Tag", e.Tag}} {
		if len(f.v) > maxIDLen {
			return fmt.Errorf("%w: %s longer than %d bytes", ErrInvalidEntry, f.name, maxIDLen)
		}
	}
	if e.ContentType == "" || len(e.ContentType) > maxHeaderLen || !headerSafe(e.ContentType) {
		return fmt.Errorf("%w: Content-Type %q", ErrInvalidEntry, e.ContentType)
	}
	if !strongETag(e.ETag) {
		return fmt.Errorf("%w: ETag %q is not a strong quoted entity tag", ErrInvalidEntry, e.ETag)
	}
	if y := e.LastModified.Year(); !e.LastModified.IsZero() && (y < 1970 || y > 9999) {
		return fmt.Errorf("%w: Last-Modified %v out of range", ErrInvalidEntry, e.LastModified)
	}
	if e.FreshUntil.IsZero() {
		if e.StaleWhileRevalidate != 0 || e.Validator != "" {
			return fmt.Errorf("%w: StaleWhileRevalidate or Validator without FreshUntil", ErrInvalidEntry)
		}
		return nil
	}
	if y := e.FreshUntil.Year(); y < 1970 || y > 9999 {
		return fmt.Errorf("%w: FreshUntil %v out of range", ErrInvalidEntry, e.FreshUntil)
	}
	if e.StaleWhileRevalidate < 0 || e.StaleWhileRevalidate/time.Second > maxStaleSecs {
		return fmt.Errorf("%w: StaleWhileRevalidate %v out of range", ErrInvalidEntry, e.StaleWhileRevalidate)
	}
	if e.Validator != "" && !strongETag(e.Validator) {
		return fmt.Errorf("%w: Validator %q is not a strong quoted entity tag", ErrInvalidEntry, e.Validator)
	}
	return nil
}

// revalidates reports whether the entry has a freshness to keep, so that
// its value carries the revalidation fields.
func (e *Entry) revalidates() bool { return !e.FreshUntil.IsZero() }

// headerSafe reports whether s is visible ASCII and spaces only.
func headerSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// strongETag reports whether s is a strong entity-tag of RFC 9110 §8.8.3:
// DQUOTE *etagc DQUOTE, with etagc %x21 / %x23-7E (obs-text excluded).
func strongETag(s string) bool {
	if len(s) < 2 || len(s) > maxHeaderLen || s[0] != '"' || s[len(s)-1] != '"' {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; c < 0x21 || c == '"' || c > 0x7e {
			return false
		}
	}
	return true
}

// prepare fills the fields the cache keeps on a stored entry: a private copy
// of key and the header values, in one allocation.
func (e *Entry) prepare(key []byte, hash uint64) {
	n := len(key) + len(e.ContentType) + len(e.ETag)
	if !e.LastModified.IsZero() {
		n += httpDateLen
	}
	buf := make([]byte, 0, n)
	buf = append(buf, key...)
	e.key = buf[:len(buf):len(buf)]
	buf = append(buf, e.ContentType...)
	e.ct = buf[len(e.key):len(buf):len(buf)]
	at := len(buf)
	buf = append(buf, e.ETag...)
	e.etag = buf[at:len(buf):len(buf)]
	if !e.LastModified.IsZero() {
		at = len(buf)
		buf = e.LastModified.UTC().AppendFormat(buf, http.TimeFormat)
		e.lastMod = buf[at:len(buf):len(buf)]
	}
	e.ref = refIndex(hash)
	e.cost = int64(len(e.Body)+cap(buf)+len(e.ContentType)+len(e.ETag)+len(e.OrgID)+len(e.ImageID)+len(e.Tag)+len(e.Validator)) + entryOverhead
}

// withoutBody returns a copy of e, a prepared entry, for decoded: its body
// on disk only.
func (e *Entry) withoutBody() *Entry {
	cp := *e
	cp.cost -= int64(len(e.Body))
	cp.Body, cp.onDisk = nil, true
	return &cp
}

// withBody returns a copy of e, a prepared entry without its body, with
// body, for L1.
func (e *Entry) withBody(body []byte) *Entry {
	cp := *e
	cp.cost += int64(len(body))
	cp.Body, cp.onDisk = body, false
	return &cp
}

// Level says where Get found an entry.
type Level uint8

// Levels.
const (
	Miss Level = iota
	L1
	L2
)

func (l Level) String() string {
	switch l {
	case L1:
		return "l1"
	case L2:
		return "l2"
	}
	return "miss"
}
