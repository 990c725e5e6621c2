package blob

import "context"

type partialKey struct{}

// Partial marks ctx for an Open whose Object may be read in part or not
// at all: an HTTP HEAD, a Range, a conditional GET that may end in a 304.
// The S3 store then opens it with a HeadObject (its size, version and
// checksum) and sends a GET only for what is read, from the first Read's
// offset to the bound a Limit gave; without the mark, Open sends a GET of
// the whole object at once, one round trip for the common whole read.
// The files store ignores it.
func Partial(ctx context.Context) context.Context {
	return context.WithValue(ctx, partialKey{}, true)
}

func isPartial(ctx context.Context) bool {
	v, _ := ctx.Value(partialKey{}).(bool)
	return v
}

// Limiter is an Object that can be told how much its next reads take, so
// that a store fetching by request (S3) asks for no more: after Limit(n),
// the next GET is of the n bytes from the current offset (a Seek away
// forgets it). It is a hint, not a cap: reads past those bytes send
// another GET, of the rest.
type Limiter interface {
	Limit(n int64)
}

// Limit tells r, when it is a Limiter, that the next reads take at most n
// bytes (see Limiter); other readers are left alone. A writer's ReadFrom
// calls it with an io.LimitedReader's R and N, as http.ServeContent's
// copy of a range gives it.
func Limit(r any, n int64) {
	if l, ok := r.(Limiter); ok {
		l.Limit(n)
	}
}
