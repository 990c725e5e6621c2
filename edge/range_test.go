package edge

import "testing"

func TestParseRange(t *testing.T) {
	const size = 100
	tests := []struct {
		h          string
		start, end int
		res        rangeResult
	}{
		{"bytes=0-4", 0, 4, rangePart},
		{"bytes=10-", 10, 99, rangePart},
		{"bytes=-10", 90, 99, rangePart},
		{"bytes=-1000", 0, 99, rangePart},
		{"bytes=95-1000", 95, 99, rangePart},
		{" bytes=99-99 ", 99, 99, rangePart},
		{"bytes=0-4,10-14", 0, 0, rangeWhole}, // several ranges: the whole body
		{"items=0-4", 0, 0, rangeWhole},       // another unit
		{"bytes=100-", 0, 0, rangeUnsatisfiable},
		{"bytes=5-4", 0, 0, rangeUnsatisfiable},
		{"bytes=-0", 0, 0, rangeUnsatisfiable},
		{"bytes=+1-4", 0, 0, rangeUnsatisfiable},
		{"bytes=1--4", 0, 0, rangeUnsatisfiable},
		{"bytes=a-b", 0, 0, rangeUnsatisfiable},
		{"bytes=", 0, 0, rangeUnsatisfiable},
		{"bytes=-", 0, 0, rangeUnsatisfiable},
		{"bytes=99999999999999999999-", 0, 0, rangeUnsatisfiable},
	}
	for _, tt := range tests {
		start, end, res := parseRange([]byte(tt.h), size)
		if res != tt.res || (res == rangePart && (start != tt.start || end != tt.end)) {
			t.Errorf("parseRange(%q) = %d-%d %v, want %d-%d %v", tt.h, start, end, res, tt.start, tt.end, tt.res)
		}
	}
	if _, _, res := parseRange([]byte("bytes=0-"), 0); res != rangeUnsatisfiable {
		t.Errorf("a range of an empty body: %v", res)
	}
}

func TestIfRange(t *testing.T) {
	etag, lm := []byte(`"abc"`), []byte("Tue, 14 Nov 2023 22:13:20 GMT")
	for _, tt := range []struct {
		h    string
		want bool
	}{
		{"", true}, {`"abc"`, true}, {`"abd"`, false}, {`W/"abc"`, false},
		{"Tue, 14 Nov 2023 22:13:20 GMT", true}, {"Tue, 14 Nov 2023 22:13:21 GMT", false},
	} {
		if got := ifRange([]byte(tt.h), etag, lm); got != tt.want {
			t.Errorf("ifRange(%q) = %v", tt.h, got)
		}
	}
	if ifRange([]byte("Tue, 14 Nov 2023 22:13:20 GMT"), etag, nil) {
		t.Error("a date matched an entry without Last-Modified")
	}
}

// FuzzParseRange: any header gives a range inside the body, or none.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"bytes=0-4", "bytes=-5", "bytes=3-", "bytes=1-2,3-4", "bytes=9999999999999999999-"} {
		f.Add(s, 10)
	}
	f.Fuzz(func(t *testing.T, h string, size int) {
		if size < 0 || size > 1<<30 {
			return
		}
		start, end, res := parseRange([]byte(h), size)
		if res == rangePart && (start < 0 || start > end || end >= size) {
			t.Fatalf("parseRange(%q, %d) = %d-%d", h, size, start, end)
		}
	})
}
