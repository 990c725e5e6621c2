package cache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
	"time"
)

// encode encodes e as Put would, its body in file 1 unless it is on disk.
func encode(e *Entry) []byte {
	if !e.onDisk {
		c := *e
		c.file, c.size, c.sum = 1, len(e.Body), crc32.Checksum(e.Body, castagnoli)
		e = &c
	}
	v := make([]byte, encodedLen(e))
	encodeValue(v, e)
	return v
}

func TestValueRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		e    *Entry
	}{
		{"full", &Entry{Body: []byte("png bytes"), ContentType: "image/png", ETag: `"abc"`,
			LastModified: time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC), StoredAt: time.Date(2025, 1, 1, 0, 0, 0, 999999999, time.UTC),
			OrgID: "org_1", ImageID: "img_1", Tag: "api_1"}},
		{"no last-modified, no tag", &Entry{Body: []byte{}, ContentType: "application/pdf", ETag: `""`,
			StoredAt: time.Unix(1_700_000_000, 0).UTC(), OrgID: "o", ImageID: "i"}},
		{"large body", newEntry("o", "i", "t", 1<<20, 9)},
		{"og image", newOGEntry("o", "og:c", `"origin"`, 100, 10)},
		{"og image, no validator, no stale-while-revalidate", func() *Entry {
			e := newOGEntry("o", "og:c", "", 0, 11)
			e.StaleWhileRevalidate = 0
			return e
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := encode(tt.e)
			got, err := decodeValue(v)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			sameEntry(t, nil, got, tt.e)
			if !got.StoredAt.Equal(tt.e.StoredAt) {
				t.Fatalf("StoredAt %v, want %v", got.StoredAt, tt.e.StoredAt)
			}
			if !bytes.Equal(encode(got), v) {
				t.Fatal("re-encoding differs")
			}
		})
	}
}

func TestValueCorruption(t *testing.T) {
	good := encode(newEntry("o", "i", "t", 100, 1))
	// withCRC fixes the trailer, so the structural checks are what refuse.
	withCRC := func(v []byte) []byte {
		binary.LittleEndian.PutUint32(v[len(v)-4:], crc32.Checksum(v[:len(v)-4], castagnoli))
		return v
	}
	tests := []struct {
		name string
		f    func([]byte) []byte
	}{
		{"empty", func([]byte) []byte { return nil }},
		{"short", func(v []byte) []byte { return v[:10] }},
		{"truncated by one", func(v []byte) []byte { return v[:len(v)-1] }},
		{"bit flip", func(v []byte) []byte { v[50] ^= 4; return v }},
		{"the layout with bodies inside", func(v []byte) []byte { v[0] = 1; return withCRC(v) }},
		{"unknown version", func(v []byte) []byte { v[0] = 3; return withCRC(v) }},
		{"revalidation flag on an entry without its fields", func(v []byte) []byte { v[1] = flagRevalidates; return withCRC(v) }},
		{"unknown flag", func(v []byte) []byte { v[1] = 2; return withCRC(v) }},
		{"nanoseconds out of range", func(v []byte) []byte { binary.LittleEndian.PutUint32(v[10:], 1e9); return withCRC(v) }},
		{"no body file", func(v []byte) []byte { binary.LittleEndian.PutUint64(v[40:], 0); return withCRC(v) }},
		{"string length too long", func(v []byte) []byte { binary.LittleEndian.PutUint16(v[26:], 0xffff); return withCRC(v) }},
		{"invalid etag", func(v []byte) []byte { v[valueHeaderLen+len("image/png")] = 'W'; return withCRC(v) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.f(append([]byte(nil), good...))
			if e, err := decodeValue(v); !errors.Is(err, ErrCorrupt) || e != nil {
				t.Fatalf("decode = %v, %v; want ErrCorrupt", e, err)
			}
		})
	}
}

// TestValueOfOGCorruption: the revalidation fields are checked too.
func TestValueOfOGCorruption(t *testing.T) {
	good := encode(newOGEntry("o", "og:c", `"v"`, 100, 1))
	withCRC := func(v []byte) []byte {
		binary.LittleEndian.PutUint32(v[len(v)-4:], crc32.Checksum(v[:len(v)-4], castagnoli))
		return v
	}
	tests := []struct {
		name string
		f    func([]byte) []byte
	}{
		{"flag cleared", func(v []byte) []byte { v[1] = 0; return withCRC(v) }},
		{"zero freshness", func(v []byte) []byte { putTime(v[valueHeaderLen:], time.Time{}); return withCRC(v) }},
		{"freshness before 1970", func(v []byte) []byte { putTime(v[valueHeaderLen:], time.Unix(-5, 0)); return withCRC(v) }},
		{"validator length too long", func(v []byte) []byte { binary.LittleEndian.PutUint16(v[valueHeaderLen+16:], 200); return withCRC(v) }},
		{"cut into the revalidation fields", func(v []byte) []byte {
			v = v[:valueHeaderLen+8+trailerLen]
			clear(v[26:40])
			return withCRC(v)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.f(append([]byte(nil), good...))
			if e, err := decodeValue(v); !errors.Is(err, ErrCorrupt) || e != nil {
				t.Fatalf("decode = %v, %v; want ErrCorrupt", e, err)
			}
		})
	}
}

func TestMetaRoundTrip(t *testing.T) {
	m := meta{seq: 1 << 40, size: 12345, valueLen: 999, file: 77, org: "o", image: "", tag: "api"}
	v := encodeMeta(&m)
	got, err := decodeMeta(v)
	if err != nil || got != m {
		t.Fatalf("decodeMeta = %+v, %v; want %+v", got, err, m)
	}
	for i := range v {
		bad := append([]byte(nil), v...)
		bad[i] ^= 0x40
		if _, err := decodeMeta(bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flipped byte %d: %v", i, err)
		}
	}
}

func TestIndexPrefixes(t *testing.T) {
	// No id's range contains another's keys.
	a, ab := indexPrefix(byImage, "a"), indexPrefix(byImage, "ab")
	if k := indexKey(byImage, "ab", []byte("k")); bytes.HasPrefix(k, a) {
		t.Fatalf("key of id ab %q falls in the range of id a %q", k, a)
	}
	if bytes.HasPrefix(ab, a) {
		t.Fatal("prefix of ab extends prefix of a")
	}
	if got := prefixEnd([]byte{'x', 0xff}); !bytes.Equal(got, []byte{'y'}) {
		t.Fatalf("prefixEnd = %q", got)
	}
}

// FuzzDecode: arbitrary bytes never panic the decoders, and whatever decodes
// re-encodes to the same bytes. Each input is also tried with a valid
// checksum appended so that the fuzzer reaches the structural checks.
func FuzzDecode(f *testing.F) {
	f.Add(encode(newEntry("o", "i", "t", 64, 1)))
	f.Add(encode(&Entry{ContentType: "image/png", ETag: `"x"`, OrgID: "o", ImageID: "i"}))
	f.Add(encode(newOGEntry("o", "og:c", `"v"`, 64, 2)))
	f.Add(encodeMeta(&meta{seq: 7, size: 100, valueLen: 50, file: 3, org: "o", image: "i"}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		sealed := binary.LittleEndian.AppendUint32(append([]byte(nil), data...), crc32.Checksum(data, castagnoli))
		for _, v := range [][]byte{data, sealed} {
			if e, err := decodeValue(v); err == nil {
				if !bytes.Equal(encode(e), v) {
					t.Fatalf("value %x decodes but re-encodes differently", v)
				}
			} else if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decodeValue error %v is not ErrCorrupt", err)
			}
			if m, err := decodeMeta(v); err == nil {
				if !bytes.Equal(encodeMeta(&m), v) {
					t.Fatalf("meta %x decodes but re-encodes differently", v)
				}
			} else if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decodeMeta error %v is not ErrCorrupt", err)
			}
		}
	})
}
