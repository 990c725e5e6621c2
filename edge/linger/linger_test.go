package linger

import (
	"bytes"
	"io"
	"net"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestCloseLetsTheClientReadTheAnswer: a server answers and closes while
// the client is still sending a body it never reads. Closed with Close, the
// client reads the whole answer every time; closed at once, the reset
// destroys it in some runs (checked by hand: the plain close loses it).
func TestCloseLetsTheClientReadTheAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	answer := bytes.Repeat([]byte("answer "), 10000) // 70 KB: more than one segment
	for i := range 20 {
		closed := make(chan struct{})
		go func() {
			c, err := ln.Accept()
			if err != nil {
				close(closed)
				return
			}
			buf := make([]byte, 1000)
			io.ReadFull(c, buf) // the start of the request only
			c.Write(answer)
			Close(c, func() { close(closed) })
		}()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		sent := make(chan struct{})
		go func() {
			defer close(sent)
			c.Write(make([]byte, 8<<20)) // fails once the server is gone: fine
		}()
		got, err := io.ReadAll(c)
		if err != nil || !bytes.Equal(got, answer) {
			t.Fatalf("round %d: read %d bytes of %d (%v)", i, len(got), len(answer), err)
		}
		c.Close()
		<-sent
		<-closed
	}
}

// TestCloseAfter: CloseAfter closes after the answer, and asks a Marker
// to linger; another connection is only closed.
func TestCloseAfter(t *testing.T) {
	m := &marked{}
	var ctx fasthttp.RequestCtx
	ctx.Init2(m, nil, false)
	CloseAfter(&ctx)
	if !m.lingers || !ctx.Response.ConnectionClose() {
		t.Fatalf("lingers %v, Connection: close %v", m.lingers, ctx.Response.ConnectionClose())
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	var other fasthttp.RequestCtx
	other.Init2(a, nil, false)
	CloseAfter(&other) // not a Marker
	if !other.Response.ConnectionClose() {
		t.Fatal("CloseAfter did not close a connection that cannot linger")
	}
}

type marked struct {
	net.Conn
	lingers bool
}

func (m *marked) Linger() { m.lingers = true }

// TestCloseWithoutHalfClose: a connection that cannot be half-closed is
// closed at once and done runs.
func TestCloseWithoutHalfClose(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	done := false
	Close(a, func() { done = true })
	if !done {
		t.Fatal("done did not run")
	}
	if _, err := a.Write([]byte("x")); err == nil {
		t.Fatal("the connection is still open")
	}
}
