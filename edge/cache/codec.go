package cache

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"strings"
	"time"
)

// L2 layout. Every record's key starts with one byte naming its kind:
//
//	'v' key               value: the entry but its body (valueVersion layout below)
//	'm' key               meta:  seq, size, value length, owner ids; crc32c
//	'q' seq (8 bytes BE)  queue: key; the FIFO of the eviction clock
//	'x' kind len(id) id key  index: empty; kind is 'i' image, 'o' org, 't' tag
//	'f'                   the layout's name, formatName
//
// One pebble batch writes or deletes all of an entry's records, so they are
// consistent after a crash. The body is a file (bodies.go), written and
// synced before the batch that names it commits.
const (
	prefixValue = 'v'
	prefixMeta  = 'm'
	prefixQueue = 'q'
	prefixIndex = 'x'
	formatKey   = "f"
	formatName  = "pictor-edge-cache/2"
	// formatOld is the layout that kept bodies in pebble: Open empties it.
	formatOld = "pictor-edge-cache/1"
)

// kind names the owner an index maps to keys.
type kind byte

const (
	byImage kind = 'i'
	byOrg   kind = 'o'
	byTag   kind = 't'
)

func (k kind) String() string {
	switch k {
	case byImage:
		return "image"
	case byOrg:
		return "org"
	}
	return "tag"
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Value layout, little-endian. The body is not in the value: it is a file
// of its own (bodies.go), which the value names with its length and
// checksum.
//
//	0  version (2)     1  flags (0, or flagRevalidates)
//	2  Last-Modified   int64 Unix seconds, then uint32 nanoseconds
//	14 StoredAt        int64 Unix seconds, then uint32 nanoseconds
//	26 lengths         uint16 ContentType, ETag, OrgID, ImageID, Tag
//	36 body length     uint32
//	40 body file       uint64, its number under bodies/
//	48 body checksum   uint32, crc32c of the body
//	52 ContentType ETag OrgID ImageID Tag
//	n-4 crc32c of bytes [0, n-4)
//
// With flagRevalidates (an entry with a FreshUntil: an OG image), 18 bytes
// follow the header and the strings end with the Validator:
//
//	52 FreshUntil      int64 Unix seconds, then uint32 nanoseconds
//	64 stale-while-revalidate  uint32 seconds
//	68 length          uint16 Validator
//	70 ContentType ETag OrgID ImageID Tag Validator
const (
	valueVersion   = 2
	valueHeaderLen = 52
	revalidateLen  = 18
	trailerLen     = 4
	maxBodyLen     = math.MaxUint32

	flagRevalidates = 1 << 0
)

// Unix seconds of the years 1 and 9999's end: times outside are corrupt.
const (
	minUnix = -62135596800
	maxUnix = 253402300799
)

func encodedLen(e *Entry) int {
	n := valueHeaderLen + len(e.ContentType) + len(e.ETag) + len(e.OrgID) + len(e.ImageID) + len(e.Tag) + trailerLen
	if e.revalidates() {
		n += revalidateLen + len(e.Validator)
	}
	return n
}

// encodeValue writes e into dst, which is exactly encodedLen(e) long. The
// caller has validated e (string lengths fit their uint16 fields), kept
// whole seconds of its StaleWhileRevalidate and set its body's file,
// length and checksum.
func encodeValue(dst []byte, e *Entry) {
	dst[0], dst[1] = valueVersion, 0
	putTime(dst[2:], e.LastModified)
	putTime(dst[14:], e.StoredAt)
	strs := [...]string{e.ContentType, e.ETag, e.OrgID, e.ImageID, e.Tag}
	for i, s := range strs {
		binary.LittleEndian.PutUint16(dst[26+2*i:], uint16(len(s)))
	}
	binary.LittleEndian.PutUint32(dst[36:], uint32(e.size))
	binary.LittleEndian.PutUint64(dst[40:], e.file)
	binary.LittleEndian.PutUint32(dst[48:], e.sum)
	off := valueHeaderLen
	if e.revalidates() {
		dst[1] |= flagRevalidates
		putTime(dst[off:], e.FreshUntil)
		binary.LittleEndian.PutUint32(dst[off+12:], uint32(e.StaleWhileRevalidate/time.Second))
		binary.LittleEndian.PutUint16(dst[off+16:], uint16(len(e.Validator)))
		off += revalidateLen
	}
	for _, s := range strs {
		off += copy(dst[off:], s)
	}
	if e.revalidates() {
		off += copy(dst[off:], e.Validator)
	}
	binary.LittleEndian.PutUint32(dst[off:], crc32.Checksum(dst[:off], castagnoli))
}

func putTime(dst []byte, t time.Time) {
	binary.LittleEndian.PutUint64(dst, uint64(t.Unix()))
	binary.LittleEndian.PutUint32(dst[8:], uint32(t.Nanosecond()))
}

func getTime(src []byte) (time.Time, bool) {
	sec := int64(binary.LittleEndian.Uint64(src))
	nsec := binary.LittleEndian.Uint32(src[8:])
	if sec < minUnix || sec > maxUnix || nsec >= 1e9 {
		return time.Time{}, false
	}
	if sec == minUnix && nsec == 0 {
		return time.Time{}, true
	}
	return time.Unix(sec, int64(nsec)).UTC(), true
}

// decodeValue checks and decodes an L2 value into a new Entry that owns its
// memory (src may be pebble's buffer) and whose body is on disk. Any defect
// is an ErrCorrupt.
func decodeValue(src []byte) (*Entry, error) {
	n := len(src)
	if n < valueHeaderLen+trailerLen {
		return nil, fmt.Errorf("%w: value of %d bytes is shorter than its header", ErrCorrupt, n)
	}
	if got, want := crc32.Checksum(src[:n-trailerLen], castagnoli), binary.LittleEndian.Uint32(src[n-trailerLen:]); got != want {
		return nil, fmt.Errorf("%w: value checksum %08x, want %08x", ErrCorrupt, got, want)
	}
	if src[0] != valueVersion || src[1]&^flagRevalidates != 0 {
		return nil, fmt.Errorf("%w: value version %d flags %d", ErrCorrupt, src[0], src[1])
	}
	lastMod, ok1 := getTime(src[2:])
	stored, ok2 := getTime(src[14:])
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("%w: value time out of range", ErrCorrupt)
	}
	var lens [6]int // the five strings of the header, and the Validator
	total := valueHeaderLen + trailerLen
	for i := range 5 {
		lens[i] = int(binary.LittleEndian.Uint16(src[26+2*i:]))
		total += lens[i]
	}
	off := valueHeaderLen
	var (
		fresh time.Time
		swr   time.Duration
	)
	if src[1]&flagRevalidates != 0 {
		if n < valueHeaderLen+revalidateLen+trailerLen {
			return nil, fmt.Errorf("%w: value of %d bytes is shorter than its header", ErrCorrupt, n)
		}
		var ok bool
		if fresh, ok = getTime(src[off:]); !ok || fresh.IsZero() {
			return nil, fmt.Errorf("%w: value freshness out of range", ErrCorrupt)
		}
		swr = time.Duration(binary.LittleEndian.Uint32(src[off+12:])) * time.Second
		lens[5] = int(binary.LittleEndian.Uint16(src[off+16:]))
		total += revalidateLen + lens[5]
		off += revalidateLen
	}
	if total != n {
		return nil, fmt.Errorf("%w: value lengths add up to %d, have %d bytes", ErrCorrupt, total, n)
	}
	file := binary.LittleEndian.Uint64(src[40:])
	if file == 0 {
		return nil, fmt.Errorf("%w: value names no body file", ErrCorrupt)
	}
	var strs [6]string
	for i, l := range lens {
		strs[i] = string(src[off : off+l])
		off += l
	}
	e := &Entry{
		ContentType:          strs[0],
		ETag:                 strs[1],
		LastModified:         lastMod,
		StoredAt:             stored,
		OrgID:                strs[2],
		ImageID:              strs[3],
		Tag:                  strs[4],
		FreshUntil:           fresh,
		StaleWhileRevalidate: swr,
		Validator:            strs[5],
		file:                 file,
		size:                 int(binary.LittleEndian.Uint32(src[36:])),
		sum:                  binary.LittleEndian.Uint32(src[48:]),
		onDisk:               true,
	}
	if err := e.validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return e, nil
}

// meta is what eviction and purges need of an entry without reading its body.
type meta struct {
	seq      uint64 // the entry's queue position
	size     int64  // bytes of all its records, counted against DiskBytes
	valueLen uint32 // for pebble's DeleteSized
	file     uint64 // its body's file under bodies/
	org      string
	image    string
	tag      string
}

// ids lists the indexes the entry is in: its image, its organization and
// each of its space-separated tags. Empty ids are left out.
func (m *meta) ids() []purgeKey {
	out := make([]purgeKey, 0, 4)
	if m.image != "" {
		out = append(out, purgeKey{byImage, m.image})
	}
	if m.org != "" {
		out = append(out, purgeKey{byOrg, m.org})
	}
	for t := range strings.FieldsSeq(m.tag) {
		out = append(out, purgeKey{byTag, t})
	}
	return out
}

const (
	metaVersion   = 2
	metaHeaderLen = 1 + 8 + 8 + 4 + 8
)

func encodeMeta(m *meta) []byte {
	b := make([]byte, 0, metaHeaderLen+3+len(m.org)+len(m.image)+len(m.tag)+trailerLen)
	b = append(b, metaVersion)
	b = binary.BigEndian.AppendUint64(b, m.seq)
	b = binary.BigEndian.AppendUint64(b, uint64(m.size))
	b = binary.BigEndian.AppendUint32(b, m.valueLen)
	b = binary.BigEndian.AppendUint64(b, m.file)
	for _, s := range [...]string{m.org, m.image, m.tag} {
		b = append(b, byte(len(s)))
		b = append(b, s...)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func decodeMeta(src []byte) (meta, error) {
	var m meta
	n := len(src)
	if n < metaHeaderLen+3+trailerLen {
		return m, fmt.Errorf("%w: meta of %d bytes", ErrCorrupt, n)
	}
	if crc32.Checksum(src[:n-trailerLen], castagnoli) != binary.LittleEndian.Uint32(src[n-trailerLen:]) {
		return m, fmt.Errorf("%w: meta checksum", ErrCorrupt)
	}
	if src[0] != metaVersion {
		return m, fmt.Errorf("%w: meta version %d", ErrCorrupt, src[0])
	}
	m.seq = binary.BigEndian.Uint64(src[1:])
	size := binary.BigEndian.Uint64(src[9:])
	m.valueLen = binary.BigEndian.Uint32(src[17:])
	m.file = binary.BigEndian.Uint64(src[21:])
	if size > math.MaxInt64 || m.file == 0 {
		return m, fmt.Errorf("%w: meta size %d, body file %d", ErrCorrupt, size, m.file)
	}
	m.size = int64(size)
	rest := src[metaHeaderLen : n-trailerLen]
	var strs [3]string
	for i := range strs {
		if len(rest) < 1 || len(rest) < 1+int(rest[0]) {
			return m, fmt.Errorf("%w: meta ids truncated", ErrCorrupt)
		}
		strs[i] = string(rest[1 : 1+int(rest[0])])
		rest = rest[1+int(rest[0]):]
	}
	if len(rest) != 0 {
		return m, fmt.Errorf("%w: %d bytes after meta ids", ErrCorrupt, len(rest))
	}
	m.org, m.image, m.tag = strs[0], strs[1], strs[2]
	return m, nil
}

func recordKey(prefix byte, key []byte) []byte {
	return append(append(make([]byte, 0, 1+len(key)), prefix), key...)
}

func queueKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64(append(make([]byte, 0, 9), prefixQueue), seq)
}

// indexPrefix is the start of every index key of (k, id); the id's length
// comes first so that no id is a prefix of another's range.
func indexPrefix(k kind, id string) []byte {
	b := make([]byte, 0, 3+len(id))
	b = append(b, prefixIndex, byte(k))
	b = binary.AppendUvarint(b, uint64(len(id)))
	return append(b, id...)
}

func indexKey(k kind, id string, key []byte) []byte {
	return append(indexPrefix(k, id), key...)
}

// prefixEnd returns the smallest key greater than every key with prefix p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i]++; end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

// entrySize is what an entry counts against DiskBytes: its body file in
// whole blocks of the file system, and the keys and values of its value,
// meta, queue and index records.
func entrySize(key []byte, e *Entry, valueLen int) int64 {
	n := (e.size + fileBlock - 1) / fileBlock * fileBlock
	n += 1 + len(key) + valueLen // value
	n += 1 + len(key) + metaHeaderLen + 3 + len(e.OrgID) + len(e.ImageID) + len(e.Tag) + trailerLen
	n += 9 + len(key) // queue
	for _, id := range [...]string{e.OrgID, e.ImageID, e.Tag} {
		if id != "" {
			n += 3 + len(id) + len(key)
		}
	}
	return int64(n)
}
