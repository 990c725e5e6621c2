package storage_test

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/storage"
	"github.com/pictorhq/pictor/origin/storage/s3test"
)

// logBuffer is a goroutine-safe buffer the tests' slog writes into.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// testConfig is the defaults with fast backoff, private addresses allowed
// (versitygw and the stubs listen on loopback) and debug logs captured.
func testConfig(logs *logBuffer) storage.Config {
	cfg := storage.DefaultConfig()
	cfg.MaxBackoff = 20 * time.Millisecond
	cfg.AllowPrivate = true
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return cfg
}

func newConnector(t *testing.T, cfg storage.Config) *storage.Connector {
	t.Helper()
	c, err := storage.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// gwConnection is an other_s3_compatible connection to s's bucket.
func gwConnection(s *s3test.Server) storage.Connection {
	return storage.Connection{
		Provider:        storage.OtherS3Compatible,
		Bucket:          s.Bucket,
		KeyPrefix:       "renders/org-1",
		Endpoint:        s.URL,
		Region:          s3test.Region,
		ForcePathStyle:  true,
		AccessKeyID:     s3test.AccessKeyID,
		SecretAccessKey: s3test.SecretAccessKey,
	}
}

// randomStream is n pseudo-random bytes from seed, produced as they are
// read (not an io.ReaderAt: the writer must stream it).
func randomStream(seed uint64, n int64) io.Reader {
	var s [32]byte
	for i := range 8 {
		s[i] = byte(seed >> (8 * i))
	}
	return io.LimitReader(rand.NewChaCha8(s), n)
}

func randomBytes(seed uint64, n int) []byte {
	b := make([]byte, n)
	if _, err := io.ReadFull(randomStream(seed, int64(n)), b); err != nil {
		panic(err)
	}
	return b
}

// sameStream compares two readers byte for byte, a MiB at a time.
func sameStream(t *testing.T, got, want io.Reader) {
	t.Helper()
	const chunk = 1 << 20
	g, w := make([]byte, chunk), make([]byte, chunk)
	var off int64
	for {
		ng, errG := io.ReadFull(got, g)
		nw, errW := io.ReadFull(want, w)
		if ng != nw || !bytes.Equal(g[:ng], w[:nw]) {
			for i := 0; i < min(ng, nw); i++ {
				if g[i] != w[i] {
					t.Fatalf("objects differ at byte %d", off+int64(i))
				}
			}
			t.Fatalf("object has %d bytes from %d, want %d", ng, off, nw)
		}
		off += int64(ng)
		endG := errors.Is(errG, io.EOF) || errors.Is(errG, io.ErrUnexpectedEOF)
		endW := errors.Is(errW, io.EOF) || errors.Is(errW, io.ErrUnexpectedEOF)
		switch {
		case errG != nil && !endG:
			t.Fatalf("read object: %v", errG)
		case endG && endW:
			return
		case endG != endW:
			t.Fatalf("lengths differ after %d bytes", off)
		}
	}
}

// wantKind checks that err is an *storage.Error of kind whose Describe
// contains every one of words.
func wantKind(t *testing.T, err, kind error, words ...string) {
	t.Helper()
	var e *storage.Error
	if !errors.As(err, &e) || !errors.Is(err, kind) {
		t.Fatalf("error %v (%T), want an *storage.Error of kind %q", err, err, kind)
	}
	d := storage.Describe(err)
	for _, w := range words {
		if !strings.Contains(d, w) {
			t.Errorf("Describe = %q, want it to contain %q", d, w)
		}
	}
}
