package blob

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// s3Object streams an object: reads take its bytes straight from the body
// of one GET (nothing is buffered here beyond the caller's slice), and a
// read at another offset than the body's (after a Seek), or past the end
// of a bounded body, closes it and sends a ranged GET from there, of the
// same version only: to the bound a Limit gave, else to the end. An
// Object opened Partial has no body until its first Read.
//
// The bytes read in order from offset 0 go through SHA-256; the read that
// completes them compares the sum with the recorded one and, on a
// mismatch, returns ErrCorrupt instead of its bytes, so nobody gets the
// whole of a corrupt object. Bytes read after a Seek away from that
// sequence are not verified.
type s3Object struct {
	s    *s3Store
	ctx  context.Context
	key  string
	size int64
	etag string   // the version read; "" if the server gave none
	want [32]byte // the recorded SHA-256

	body    io.ReadCloser // nil when closed after a failure or a Close
	bodyAt  int64         // offset of the body's next byte
	bodyEnd int64         // offset after the body's last byte
	pos     int64         // offset of the next Read
	limit   int64         // end of the next GET (Limit); 0 for none

	hash   hash.Hash
	hashed int64 // bytes [0, hashed) went through hash, in order
	err    error // ErrCorrupt or ErrChanged, returned by every later Read
	closed bool
}

var (
	_ Object  = (*s3Object)(nil)
	_ Limiter = (*s3Object)(nil)
)

var errNegativeSeek = errors.New("blob: seek to a negative position")

func (o *s3Object) Read(p []byte) (int, error) {
	switch {
	case o.closed:
		return 0, os.ErrClosed
	case o.err != nil:
		return 0, o.err
	case o.pos >= o.size:
		return 0, io.EOF
	case len(p) == 0:
		return 0, nil
	}
	if o.body == nil || o.bodyAt != o.pos || o.bodyAt >= o.bodyEnd {
		if err := o.reopen(); err != nil {
			return 0, err
		}
	}
	if rest := o.bodyEnd - o.pos; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := o.body.Read(p)
	o.bodyAt += int64(n)
	if n > 0 && o.hashed == o.pos {
		o.hash.Write(p[:n])
		o.hashed += int64(n)
		if o.hashed == o.size {
			var got [32]byte
			o.hash.Sum(got[:0])
			if got != o.want {
				o.drop()
				o.err = o.s.corrupt(o.ctx, o.key, fmt.Errorf("content SHA-256 %x, recorded %x", got, o.want))
				return 0, o.err
			}
		}
	}
	o.pos += int64(n)
	switch {
	case err == nil:
		return n, nil
	case err == io.EOF && o.pos == o.size:
		return n, io.EOF
	case err == io.EOF && o.pos == o.bodyEnd:
		o.drop() // a bounded body, read whole: the next Read sends another GET
		return n, nil
	case err == io.EOF:
		err = fmt.Errorf("body ended at %d of %d bytes: %w", o.pos, o.size, io.ErrUnexpectedEOF)
	}
	o.drop() // the next Read opens a new body from pos
	err = o.s.fail(o.ctx, "read", o.key, err)
	o.s.metrics.streams.WithLabelValues(result(err)).Inc()
	return n, err
}

// reopen replaces the body by a ranged GET from pos, to the bound of a
// Limit or else the end, of the version read so far: another version (the
// object was replaced since) is ErrChanged.
func (o *s3Object) reopen() error {
	o.drop()
	end := o.size
	if o.limit > o.pos && o.limit < o.size {
		end = o.limit
	}
	o.limit = 0
	out, err := o.s.get(o.ctx, o.key, o.pos, end, o.size, o.etag)
	if err != nil {
		if errors.Is(err, ErrChanged) || errors.Is(err, ErrNotFound) {
			o.err = fmt.Errorf("blob read %s: %w", o.key, ErrChanged)
			return o.err
		}
		return err
	}
	want, cerr := checksumOf(out.Metadata)
	if cerr != nil || want != o.want || (o.etag != "" && aws.ToString(out.ETag) != o.etag) {
		out.Body.Close() // the server ignored If-Match
		o.err = fmt.Errorf("blob read %s: %w", o.key, ErrChanged)
		return o.err
	}
	if got := aws.ToInt64(out.ContentLength); got != end-o.pos {
		out.Body.Close()
		return fmt.Errorf("blob read %s: ranged GET of [%d, %d) answered %d bytes, want %d", o.key, o.pos, end, got, end-o.pos)
	}
	o.body, o.bodyAt, o.bodyEnd = out.Body, o.pos, end
	return nil
}

// Limit bounds the next GET to n bytes from the current offset (see
// Limiter); a body open already is kept when it starts there.
func (o *s3Object) Limit(n int64) {
	if n > 0 {
		o.limit = o.pos + n
	}
}

func (o *s3Object) drop() {
	if o.body != nil {
		o.body.Close()
		o.body = nil
	}
}

// Seek moves the offset of the next Read; it sends nothing.
func (o *s3Object) Seek(offset int64, whence int) (int64, error) {
	if o.closed {
		return 0, os.ErrClosed
	}
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += o.pos
	case io.SeekEnd:
		offset += o.size
	default:
		return 0, fmt.Errorf("blob: seek whence %d", whence)
	}
	if offset < 0 {
		return 0, errNegativeSeek
	}
	if offset != o.pos {
		o.limit = 0 // given for the reads from the old offset
	}
	o.pos = offset
	return offset, nil
}

// Close closes the body; an unfinished one closes its connection.
func (o *s3Object) Close() error {
	if o.closed {
		return os.ErrClosed
	}
	o.closed = true
	o.drop()
	return nil
}
