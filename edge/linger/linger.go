// Package linger closes a connection whose client may still be sending a
// request body the server answered without reading, as nginx's lingering
// close and Go's net/http server do. Closed at once, the kernel resets the
// connection when more of the body arrives (or is already waiting), and a
// reset destroys what the client has not read yet: a 413 or 400 meant for
// the client becomes "connection reset by peer". Lingering sends the answer
// and a FIN, then reads and discards what the client still sends until it
// closes its side, Time has passed or MaxBytes were read.
package linger

import (
	"io"
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// Bounds of one lingering connection: a client that keeps sending is cut
// off after Time or MaxBytes, whichever comes first. The connection stays
// counted against the server's limits until then.
const (
	Time     = 5 * time.Second
	MaxBytes = 64 << 20
)

// Marker is a connection that can be asked to linger when it is closed.
type Marker interface{ Linger() }

// CloseAfter closes ctx's connection after its answer, which a request
// whose body was not read whole needs (the rest of the body would be read
// as the next request), and asks the connection to linger if it is a
// Marker.
func CloseAfter(ctx *fasthttp.RequestCtx) {
	ctx.SetConnectionClose()
	if m, ok := ctx.Conn().(Marker); ok {
		m.Linger()
	}
}

// Close half-closes c and returns; a goroutine discards what the client
// still sends, then closes c and calls done. A connection that cannot be
// half-closed is closed at once (done too).
func Close(c net.Conn, done func()) error {
	cw, ok := c.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		err := c.Close()
		done()
		return err
	}
	go func() {
		defer done()
		defer c.Close()
		if c.SetReadDeadline(time.Now().Add(Time)) == nil {
			io.Copy(io.Discard, io.LimitReader(c, MaxBytes))
		}
	}()
	return nil
}
