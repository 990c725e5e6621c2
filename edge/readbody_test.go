package edge

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestReadBodyExactCapacity: a fetched body the cache charges by length
// holds no spare capacity, whether the origin sent its length or chunks.
func TestReadBodyExactCapacity(t *testing.T) {
	payload := bytes.Repeat([]byte("pictor"), 50_000) // 300,000 bytes
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("chunked") == "" {
			w.Header().Set("Content-Length", "300000")
		}
		for rest := payload; len(rest) > 0; {
			n := min(7_000, len(rest))
			w.Write(rest[:n])
			w.(http.Flusher).Flush()
			rest = rest[n:]
		}
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name, query string
		limit       int64
		wantErr     error
	}{
		{"with length", "", 1 << 20, nil},
		{"chunked", "?chunked=1", 1 << 20, nil},
		{"with length over the limit", "", 299_999, errTooBig},
		{"chunked over the limit", "?chunked=1", 299_999, errTooBig},
		{"exactly the limit", "?chunked=1", 300_000, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Get(srv.URL + tc.query)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if (tc.query == "") != (resp.ContentLength == 300_000) {
				t.Fatalf("Content-Length %d: the case does not test what it says", resp.ContentLength)
			}
			body, err := readBody(resp, tc.limit)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("readBody: %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil {
				return
			}
			if !bytes.Equal(body, payload) {
				t.Fatalf("body of %d bytes differs from the %d sent", len(body), len(payload))
			}
			if cap(body) != len(body) {
				t.Errorf("capacity %d for %d bytes", cap(body), len(body))
			}
		})
	}
	t.Run("truncated", func(t *testing.T) {
		resp := &http.Response{ContentLength: 10, Body: io.NopCloser(strings.NewReader("short"))}
		if _, err := readBody(resp, 100); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("a body shorter than its length: %v, want %v", err, io.ErrUnexpectedEOF)
		}
	})
}
