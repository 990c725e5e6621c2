package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/pictorhq/pictor/origin/imageparams"
)

// rpcAnswer is a JSON-RPC answer as it came.
type rpcAnswer struct {
	status int
	header http.Header
	raw    []byte
	ID     json.RawMessage `json:"id"`
	Result *struct {
		IsError           bool           `json:"isError"`
		StructuredContent map[string]any `json:"structuredContent"`
		Content           []struct{ Text string }
	} `json:"result"`
	Error *struct {
		Code    int
		Message string
	} `json:"error"`
}

// rawPost sends msg to /mcp as token's holder over a raw connection,
// with its Content-Length or chunked, and reads the answer while still
// sending: the server may answer before it has read the body, then
// close the connection, and the answer must not be lost to a client
// still writing (an http.Client can report the write's error instead).
func (s *site) rawPost(token string, msg []byte, chunked bool) (*rpcAnswer, error) {
	conn, err := net.Dial("tcp", s.srv.Listener.Addr().String())
	if err != nil {
		return nil, err
	}
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		framing := fmt.Sprintf("Content-Length: %d", len(msg))
		if chunked {
			framing = "Transfer-Encoding: chunked"
		}
		fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: pictor.test\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
			"Accept: application/json, text/event-stream\r\n%s\r\n\r\n", token, framing)
		if !chunked {
			conn.Write(msg) // fails once the server has answered and closed
			return
		}
		for rest := msg; len(rest) > 0; {
			n := min(len(rest), 64<<10)
			// Three writes: formatting the chunk would copy it, which
			// the allocation count would take for the server's.
			fmt.Fprintf(conn, "%x\r\n", n)
			conn.Write(rest[:n])
			if _, err := io.WriteString(conn, "\r\n"); err != nil {
				return
			}
			rest = rest[n:]
		}
		io.WriteString(conn, "0\r\n\r\n")
	}()
	defer func() { conn.Close(); <-sent }()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return readAnswer(resp)
}

// postRaw sends body to /mcp as token's holder.
func (s *site) postRaw(token string, body io.Reader) (*rpcAnswer, error) {
	req, err := http.NewRequest("POST", s.srv.URL, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return readAnswer(resp)
}

func readAnswer(resp *http.Response) (*rpcAnswer, error) {
	a := &rpcAnswer{status: resp.StatusCode, header: resp.Header}
	var err error
	if a.raw, err = io.ReadAll(resp.Body); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(a.raw, a); err != nil {
		return nil, fmt.Errorf("status %d, answer %.300q is not JSON: %w", a.status, a.raw, err)
	}
	return a, nil
}

// callMessage is a tools/call of create_image with these arguments.
func callMessage(id string, arguments string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"create_image","arguments":` + arguments + `}}`)
}

// padded returns create_image arguments holding html, css and an unknown
// member (ignored by REST) that bring them to n bytes.
func padded(t *testing.T, html, css string, n int) string {
	t.Helper()
	head := `{"html":` + quote(html) + `,"css":` + quote(css) + `,"x_padding":"`
	pad := n - len(head) - len(`"}`)
	if pad < 0 {
		t.Fatalf("arguments of %d bytes cannot hold %d", n, len(head))
	}
	return head + strings.Repeat("p", pad) + `"}`
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestHostileMCPOversized: twenty parallel calls of 32 MiB each (which
// REST refuses with 413 on its 7 MiB image body) are refused before
// anything decodes them, and what the server allocates per refused call
// is bounded by the message limit, not by the body: nothing on a
// Content-Length, at most a few times the limit for a chunked body.
func TestHostileMCPOversized(t *testing.T) {
	s := newSite(t)
	const calls = 20
	msg := callMessage("1", `{"html":"`+strings.Repeat("a", 32<<20-200)+`"}`)
	if len(msg) <= MaxMessageBytes || len(msg) > 32<<20 {
		t.Fatalf("message of %d bytes", len(msg))
	}
	for _, tc := range []struct {
		name    string
		chunked bool
		perCall uint64
	}{
		// The server answers on the header, having read nothing.
		{name: "Content-Length", perCall: 1 << 20},
		// The server reads up to the limit.
		{name: "chunked", chunked: true, perCall: 3 * MaxMessageBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			answers := make([]*rpcAnswer, calls)
			errs := make([]error, calls)
			var wg sync.WaitGroup
			for i := range calls {
				wg.Go(func() { answers[i], errs[i] = s.rawPost("all", msg, tc.chunked) })
			}
			wg.Wait()
			runtime.ReadMemStats(&after)
			perCall := (after.TotalAlloc - before.TotalAlloc) / calls
			t.Logf("allocated %.2f MiB per refused call", float64(perCall)/(1<<20))
			for i, a := range answers {
				if errs[i] != nil {
					t.Fatalf("call %d: %v", i, errs[i])
				}
				if a.status != http.StatusRequestEntityTooLarge || a.Error == nil || a.Error.Code != codeInvalidRequest ||
					string(a.ID) != "null" || !strings.Contains(a.Error.Message, fmt.Sprint(MaxMessageBytes)) {
					t.Fatalf("call %d: status %d, answer %s", i, a.status, a.raw)
				}
			}
			if perCall > tc.perCall {
				t.Fatalf("%d bytes allocated per refused call, want at most %d (the message limit is %d)", perCall, tc.perCall, MaxMessageBytes)
			}
		})
	}
	if got := s.received(); len(got) != 0 {
		t.Fatalf("the router was called %d times", len(got))
	}
}

// TestMCPMessageLimit: the limit is REST's image body plus the envelope:
// a message at it reaches the tool, one byte more is refused with 413; a
// call within it gets REST's own answer, a per-field limit included.
func TestMCPMessageLimit(t *testing.T) {
	s := newSite(t)
	envelope := len(callMessage("1", ""))
	tests := []struct {
		name    string
		msg     []byte
		status  int    // HTTP
		rest    int    // the tool's REST status; 0: refused before
		message string // in the tool error or the JSON-RPC error
	}{
		{name: "REST's largest image body", msg: callMessage("1", padded(t, strings.Repeat("h", imageparams.MaxHTMLBytes), strings.Repeat("c", imageparams.MaxCSSBytes), maxImageBody)),
			status: 200, rest: 200},
		{name: "html over its limit", msg: callMessage("1", `{"html":`+quote(strings.Repeat("h", imageparams.MaxHTMLBytes+1))+`}`),
			status: 200, rest: 400, message: "html: must be at most 5242880 bytes"},
		{name: "message at the limit", msg: callMessage("1", padded(t, "<p>x</p>", "", MaxMessageBytes-envelope)),
			status: 200, rest: 413, message: "larger than"},
		{name: "message over the limit", msg: callMessage("1", padded(t, "<p>x</p>", "", MaxMessageBytes-envelope+1)),
			status: 413, message: "larger than 7405568 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := s.postRaw("all", bytes.NewReader(tc.msg))
			if err != nil {
				t.Fatal(err)
			}
			if a.status != tc.status {
				t.Fatalf("status %d, want %d: %.300s", a.status, tc.status, a.raw)
			}
			if tc.rest == 0 {
				if a.Error == nil || a.Error.Code != codeInvalidRequest || !strings.Contains(a.Error.Message, tc.message) {
					t.Fatalf("answer %.300s, want JSON-RPC error %d saying %q", a.raw, codeInvalidRequest, tc.message)
				}
				return
			}
			if a.Result == nil {
				t.Fatalf("answer %.300s, want a tool result", a.raw)
			}
			if got := a.Result.StructuredContent["statusCode"]; tc.rest != 200 && got != float64(tc.rest) {
				t.Fatalf("tool result %.300s, want REST's %d", a.raw, tc.rest)
			}
			if tc.rest == 200 && (a.Result.IsError || a.Result.StructuredContent["url"] == nil) {
				t.Fatalf("tool result %.300s, want an image", a.raw)
			}
			if len(a.Result.Content) == 0 || !strings.Contains(a.Result.Content[0].Text, tc.message) {
				t.Fatalf("tool result %.300s, want it to say %q", a.raw, tc.message)
			}
		})
	}
	if n := len(tests[len(tests)-1].msg); n != MaxMessageBytes+1 {
		t.Fatalf("the last message has %d bytes", n)
	}
}

// TestHostileMCPDecodeBudget: large messages are handled a few at a time;
// one that does not fit the budget is answered 503 with Retry-After and
// its id, at once, while small ones go on.
func TestHostileMCPDecodeBudget(t *testing.T) {
	s := newSite(t)
	s.server.decoding = semaphore.NewWeighted(1 << 20)
	s.held = make(chan chan struct{})
	large := func(id, html string) []byte { return callMessage(id, padded(t, html, "", 600<<10)) }
	first := make(chan *rpcAnswer, 1) // nil for a failed call
	go func() {
		a, _ := s.postRaw("all", bytes.NewReader(large("1", holdHTML)))
		first <- a
	}()
	held := <-s.held // the first is in its REST twin, holding 600 KiB of the budget
	var once sync.Once
	release := func() { once.Do(func() { close(held) }) }
	t.Cleanup(release) // a failed test lets the server close

	a, err := s.postRaw("all", bytes.NewReader(large(`"second"`, "<p>x</p>")))
	if err != nil {
		t.Fatal(err)
	}
	if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") != "1" || a.Error == nil || a.Error.Code != codeBusy || string(a.ID) != `"second"` {
		t.Fatalf("second large message: status %d, Retry-After %q, answer %s", a.status, a.header.Get("Retry-After"), a.raw)
	}
	a, err = s.postRaw("all", bytes.NewReader(callMessage("3", `{"html":"<p>small</p>"}`)))
	if err != nil || a.status != 200 || a.Result == nil || a.Result.IsError {
		t.Fatalf("a small message meanwhile: %v %+v", err, a)
	}

	release()
	if a := <-first; a == nil || a.status != 200 || a.Result == nil || a.Result.IsError {
		t.Fatalf("the held message: %+v", a)
	}
	// The budget is given back when the handler returns, which may be
	// just after the client has read the answer.
	for deadline := time.Now().Add(10 * time.Second); !s.server.decoding.TryAcquire(1 << 20); runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatal("the held message's budget was not given back")
		}
	}
	s.server.decoding.Release(1 << 20)
	a, err = s.postRaw("all", bytes.NewReader(large("4", "<p>x</p>")))
	if err != nil || a.status != 200 || a.Result == nil || a.Result.IsError {
		t.Fatalf("a large message after the first: %v %+v", err, a)
	}
}

// TestHostileJSONRPCIDs: an id the SDK carries unchanged comes back as it
// was sent; any other (a number it would change, or not a string or an
// integer) is refused with a JSON-RPC -32600 and a null id before the SDK
// or a tool sees the message.
func TestHostileJSONRPCIDs(t *testing.T) {
	s := newSite(t)
	call := `"method":"tools/call","params":{"name":"create_image","arguments":{"html":"<p>x</p>"}}`
	message := func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,` + call + `}` }
	tests := []struct {
		name string
		body string
		echo string // the id that comes back, "" for a refusal
		same bool   // the same JSON value, written otherwise
	}{
		{name: "small integer", body: message("1"), echo: "1"},
		{name: "zero", body: message("0"), echo: "0"},
		{name: "negative", body: message("-7"), echo: "-7"},
		{name: "2^53", body: message("9007199254740992"), echo: "9007199254740992"},
		{name: "-2^53", body: message("-9007199254740992"), echo: "-9007199254740992"},
		{name: "string", body: message(`"abc-1"`), echo: `"abc-1"`},
		{name: "empty string", body: message(`""`), echo: `""`},
		{name: "unicode string", body: message(`"é☃😀"`), echo: `"é☃😀"`},
		{name: "HTML characters", body: message(`"<a&b>"`), echo: `"<a&b>"`},
		{name: "escaped quote", body: message(`"a\"b"`), echo: `"a\"b"`},
		{name: "escapes", body: message(`"\u0041\/\ud83d\ude00"`), echo: `"A/😀"`, same: true},
		{name: "a member ID is not the id", body: `{"jsonrpc":"2.0","ID":{},"id":5,` + call + `}`, echo: "5"},
		{name: "spaces around", body: `{ "jsonrpc" : "2.0" , "id" : 12 , ` + call + ` }`, echo: "12"},

		{name: "2^64", body: message("18446744073709551616")},
		{name: "2^53+1", body: message("9007199254740993")},
		{name: "-2^53-1", body: message("-9007199254740993")},
		{name: "fraction", body: message("1.5")},
		{name: "integral fraction", body: message("1.0")},
		{name: "exponent", body: message("1e3")},
		{name: "beyond float64", body: message("1e400")},
		{name: "minus zero", body: message("-0")},
		{name: "object", body: message(`{"a":1}`)},
		{name: "empty object", body: message(`{}`)},
		{name: "array", body: message(`[1]`)},
		{name: "boolean", body: message(`true`)},
		{name: "null", body: message(`null`)},
		{name: "unpaired high surrogate", body: message(`"\ud800"`)},
		{name: "unpaired low surrogate", body: message(`"\udc00x"`)},
		{name: "invalid UTF-8", body: message("\"a\xffb\"")},
		{name: "id twice", body: `{"jsonrpc":"2.0","id":1,"id":2,` + call + `}`},
		{name: "escaped name, twice", body: `{"jsonrpc":"2.0","id":1,"\u0069d":{},` + call + `}`},
		{name: "method not a string", body: `{"jsonrpc":"2.0","id":1,"method":7}`},
		{name: "response without id", body: `{"jsonrpc":"2.0","result":{}}`},
		{name: "too deep", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"x":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}}`},
		{name: "batch with a bad id", body: `[` + message("1e400") + `]`},
		{name: "batch", body: `[` + message("1") + `,` + message("2") + `]`},
	}
	valid := 0
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := s.postRaw("all", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if tc.echo == "" {
				if a.status != http.StatusBadRequest || a.header.Get("Content-Type") != "application/json" || a.Error == nil ||
					a.Error.Code != codeInvalidRequest || string(a.ID) != "null" || !strings.HasPrefix(a.Error.Message, "Invalid Request: ") {
					t.Fatalf("status %d, answer %s; want 400 with JSON-RPC error -32600 and a null id", a.status, a.raw)
				}
				for _, internal := range []string{"float64", "int64", "map[", "interface", "jsonrpc2", "unmarshal", "Go "} {
					if strings.Contains(a.Error.Message, internal) {
						t.Fatalf("message %q names %q", a.Error.Message, internal)
					}
				}
				return
			}
			valid++
			if a.status != http.StatusOK || a.Result == nil || a.Result.IsError {
				t.Fatalf("status %d, answer %s", a.status, a.raw)
			}
			if string(a.ID) != tc.echo {
				t.Fatalf("id %s came back as %s, want %s", idOf(tc.body), a.ID, tc.echo)
			}
			if tc.same {
				var sent, back any
				if json.Unmarshal([]byte(idOf(tc.body)), &sent) != nil || json.Unmarshal(a.ID, &back) != nil || sent != back {
					t.Fatalf("id %s came back as %s, another value", idOf(tc.body), a.ID)
				}
			}
		})
	}
	if got := len(s.received()); got != valid {
		t.Fatalf("the router ran %d calls, want %d (the valid ones)", got, valid)
	}
}

// idOf returns the raw id of one of TestHostileJSONRPCIDs's messages.
func idOf(body string) string {
	e, err := readEnvelope([]byte(body))
	if err != nil {
		return "?"
	}
	return string(e.id)
}
