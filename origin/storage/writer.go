package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Writer writes objects into one destination's bucket. It is safe for
// concurrent use.
type Writer struct {
	c        *Connector
	conn     Connection
	endpoint endpoint
	s3       *s3.Client
	//lint:ignore SA1019 feature/s3/manager is the chosen uploader (docs/decisions.md).
	uploader *manager.Uploader
	info     opInfo
}

// String names the destination without its secrets.
func (w *Writer) String() string { return "storage.Writer{" + w.conn.String() + "}" }

// Provider is the destination's provider.
func (w *Writer) Provider() Provider { return w.conn.Provider }

// Bucket is the destination's bucket.
func (w *Writer) Bucket() string { return w.conn.Bucket }

// Key is the object key of name under the destination's key prefix.
func (w *Writer) Key(name string) string { return Key(w.conn.KeyPrefix, name) }

// maxObjectKey is S3's longest object key, in bytes.
const maxObjectKey = 1024

// abortTimeout bounds the abort of a multipart upload that ran out of
// time.
const abortTimeout = 10 * time.Second

// Put writes size bytes of body (size -1: up to its end) as the object
// key, with contentType. Up to Config.PartSize bytes go in one PutObject;
// more are a multipart upload streamed part by part, so memory stays a few
// parts whatever the size. A body that implements io.ReaderAt and
// io.Seeker (bytes.Reader, os.File) is read in place, without copies.
// Every request is retried by the SDK's standard retryer and the whole
// write is bounded by Config.WriteTimeout plus a second per
// Config.WriteMinRate bytes. A body that is shorter or longer than size
// fails the write before the object is completed. The error is an
// *Error (Describe words it) or the caller's context error.
func (w *Writer) Put(ctx context.Context, key string, body io.Reader, size int64, contentType string) error {
	start := time.Now()
	err := w.putObject(ctx, key, body, size, contentType)
	provider := string(w.conn.Provider)
	w.c.metrics.writes.WithLabelValues(provider, kindLabel(err)).Inc()
	w.c.metrics.writeTime.WithLabelValues(provider).Observe(time.Since(start).Seconds())
	if err != nil {
		w.c.log.DebugContext(ctx, "storage write failed", "provider", provider, "bucket", w.conn.Bucket, "key", key,
			"kind", kindLabel(err), "error", Describe(err), "duration", time.Since(start))
		return err
	}
	if size > 0 {
		w.c.metrics.writeBytes.WithLabelValues(provider).Add(float64(size))
	}
	w.c.log.DebugContext(ctx, "storage write", "provider", provider, "bucket", w.conn.Bucket, "key", key,
		"size", size, "duration", time.Since(start))
	return nil
}

type readerAtSeeker interface {
	io.ReaderAt
	io.ReadSeeker
}

func (w *Writer) putObject(ctx context.Context, key string, body io.Reader, size int64, contentType string) error {
	switch {
	case key == "" || len(key) > maxObjectKey:
		return &Error{Kind: ErrWrite, Message: fmt.Sprintf("object key must be 1 to %d bytes", maxObjectKey)}
	case checkKeyChars(key) != "":
		return &Error{Kind: ErrWrite, Message: "object key " + checkKeyChars(key)}
	case size < -1:
		return &Error{Kind: ErrWrite, Message: fmt.Sprintf("size %d: must be -1 (unknown) or more", size)}
	case body == nil:
		return &Error{Kind: ErrWrite, Message: "no body to write"}
	}
	in := &s3.PutObjectInput{
		Bucket: aws.String(w.conn.Bucket),
		Key:    aws.String(key),
	}
	if contentType != "" {
		in.ContentType = aws.String(contentType)
	}
	if ras, ok := body.(readerAtSeeker); ok {
		n, err := remaining(ras)
		if err != nil {
			return &Error{Kind: ErrWrite, Message: "the file to write could not be read", Err: err}
		}
		if size >= 0 && n != size {
			return &Error{Kind: ErrWrite, Message: fmt.Sprintf("the file to write holds %d bytes, not the announced %d", n, size)}
		}
		size = n
		in.Body = ras
	} else if size >= 0 && size <= w.c.cfg.PartSize {
		// One part at most: read it here so that it goes in one PutObject
		// (the manager would make a one-part multipart upload of exactly
		// PartSize bytes) and can be sent again by a retry.
		buf, err := readExactly(body, size)
		if err != nil {
			return classify(ctx, err, w.info)
		}
		in.Body = bytes.NewReader(buf)
	} else {
		in.Body = &sizedReader{r: body, want: size}
	}
	return w.put(ctx, w.c.cfg.writeTimeout(size), func(octx context.Context) error {
		//lint:ignore SA1019 feature/s3/manager is the chosen uploader (docs/decisions.md).
		_, err := w.uploader.Upload(octx, in)
		var mf manager.MultiUploadFailure
		if err != nil && octx.Err() != nil && errors.As(err, &mf) {
			// The manager's own abort used the expired context: abort
			// with a fresh one so that no parts are left behind.
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
			_, abortErr := w.s3.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{
				Bucket: in.Bucket, Key: in.Key, UploadId: aws.String(mf.UploadID()),
			})
			cancel()
			if abortErr != nil {
				w.c.log.WarnContext(ctx, "storage multipart upload left unaborted", "provider", string(w.conn.Provider),
					"bucket", w.conn.Bucket, "key", key, "error", Describe(classify(ctx, abortErr, w.info)))
			}
		}
		return err
	})
}

// put runs do under a timeout of bound (or the caller's earlier
// deadline) and classifies its error.
func (w *Writer) put(ctx context.Context, bound time.Duration, do func(context.Context) error) error {
	if dl, ok := ctx.Deadline(); ok {
		bound = min(bound, time.Until(dl))
	}
	octx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	err := do(octx)
	info := w.info
	info.timeout = bound.Round(time.Millisecond)
	return classify(ctx, err, info)
}

// remaining is the number of bytes from r's offset to its end.
func remaining(r io.Seeker) (int64, error) {
	cur, err := r.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, err
	}
	end, err := r.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, err
	}
	if _, err := r.Seek(cur, io.SeekStart); err != nil {
		return 0, err
	}
	return end - cur, nil
}

// readExactly reads the whole of a body of size bytes, failing if it is
// shorter or longer.
func readExactly(body io.Reader, size int64) ([]byte, error) {
	buf := make([]byte, size)
	sr := &sizedReader{r: body, want: size}
	if _, err := io.ReadFull(sr, buf); err != nil {
		return nil, err
	}
	var one [1]byte
	if _, err := sr.Read(one[:]); err != io.EOF {
		return nil, err
	}
	return buf, nil
}

// bodyError is a failure of the body being written, not of the storage.
type bodyError struct {
	err  error
	want int64 // the announced size, for size mismatches
	got  int64 // bytes read so far
	long bool  // more bytes than announced
}

func (e *bodyError) Error() string {
	switch {
	case e.err != nil:
		return "read body: " + e.err.Error()
	case e.long:
		return fmt.Sprintf("body longer than the announced %d bytes", e.want)
	}
	return fmt.Sprintf("body of %d bytes, not the announced %d", e.got, e.want)
}

func (e *bodyError) Unwrap() error { return e.err }

// sizedReader reads a body of want bytes (-1: any) and fails the read,
// hence the upload, when the body is shorter or longer.
type sizedReader struct {
	r    io.Reader
	want int64
	read int64
}

func (s *sizedReader) Read(p []byte) (int, error) {
	if s.want >= 0 {
		left := s.want - s.read
		if left == 0 {
			return 0, s.atEnd()
		}
		if int64(len(p)) > left {
			p = p[:left]
		}
	}
	n, err := s.r.Read(p)
	s.read += int64(n)
	switch {
	case err == io.EOF && s.want >= 0 && s.read < s.want:
		return n, &bodyError{want: s.want, got: s.read}
	case err == io.EOF:
		return n, io.EOF
	case err != nil:
		return n, &bodyError{err: err}
	}
	return n, nil
}

// atEnd checks that the body ends where it was announced to.
func (s *sizedReader) atEnd() error {
	var one [1]byte
	for range 100 {
		n, err := s.r.Read(one[:])
		switch {
		case n > 0:
			return &bodyError{want: s.want, long: true}
		case err == io.EOF:
			return io.EOF
		case err != nil:
			return &bodyError{err: err}
		}
	}
	return &bodyError{err: io.ErrNoProgress}
}
