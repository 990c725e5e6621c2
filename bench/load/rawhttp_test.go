package load

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReadAnswer(t *testing.T) {
	tests := []struct {
		name     string
		raw      string
		status   int
		ct, body string
		keep     bool
		wantErr  error
	}{
		{name: "keep-alive 200", raw: "HTTP/1.1 200 OK\r\nContent-Type: image/jpeg\r\nContent-Length: 3\r\n\r\nabcNEXT",
			status: 200, ct: "image/jpeg", body: "abc", keep: true},
		{name: "header case and spaces", raw: "HTTP/1.1 200 OK\r\ncontent-length:   2 \r\nCONTENT-TYPE:image/webp\r\n\r\nhi",
			status: 200, ct: "image/webp", body: "hi", keep: true},
		{name: "connection close", raw: "HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
			status: 404, keep: false},
		{name: "HTTP/1.0 closes", raw: "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", status: 200, body: "x", keep: false},
		{name: "HTTP/1.0 keep-alive", raw: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx",
			status: 200, body: "x", keep: true},
		{name: "304 has no body", raw: "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n", status: 304, keep: true},
		{name: "chunked", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n", wantErr: errChunked},
		{name: "no length", raw: "HTTP/1.1 200 OK\r\n\r\nxyz", wantErr: errNoLength},
		{name: "garbage", raw: "SSH-2.0-OpenSSH\r\n", wantErr: errBadStatus},
		{name: "short body", raw: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", wantErr: io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf []byte
			a, keep, err := readAnswer(bufio.NewReader(strings.NewReader(tt.raw)), &buf)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.Status != tt.status || string(a.ContentType) != tt.ct || string(a.Body) != tt.body || keep != tt.keep {
				t.Fatalf("got %d %q %q keep=%v; want %d %q %q keep=%v", a.Status, a.ContentType, a.Body, keep,
					tt.status, tt.ct, tt.body, tt.keep)
			}
		})
	}
}
