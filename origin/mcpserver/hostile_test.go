package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
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

// TestHostileMCPNoPlainText: whatever reaches /mcp with a valid token is
// answered in JSON, never in the SDK's plain text: a message it cannot
// take gets a JSON-RPC error (400, -32600 with a null id for the
// envelope; 404, -32601 with the request's id for an unknown method;
// -32602 for params that are missing or not an object, with the id and
// 200 as the SDK's own, 400 for a notification); a request refused for
// its HTTP method or headers gets the standard error body; a
// notification, known or not, is accepted (202, no body). No tool runs.
func TestHostileMCPNoPlainText(t *testing.T) {
	s := newSite(t)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	current := map[string]string{"Mcp-Protocol-Version": "2026-07-28"}
	const (
		rpc      = "rpc"      // a JSON-RPC error
		standard = "standard" // the standard error body
		accepted = "accepted" // 202 without a body
		result   = "result"   // a JSON-RPC result
	)
	tests := []struct {
		name   string
		method string            // HTTP; POST when ""
		header map[string]string // set over the defaults; "-" removes one
		body   string
		status int
		kind   string
		code   int    // JSON-RPC error code
		id     string // the id that comes back
		says   string // in the message
	}{
		{name: "request without id", body: `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"check_usage","arguments":{}}}`,
			status: 400, kind: rpc, code: -32600, id: "null", says: `Invalid Request: a request needs an "id"`},
		{name: "request without id, current protocol", header: current, body: `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"check_usage","arguments":{},` + meta + `}}`,
			status: 400, kind: rpc, code: -32600, id: "null", says: `a request needs an "id"`},
		{name: "tools/list without id", body: `{"jsonrpc":"2.0","method":"tools/list"}`, status: 400, kind: rpc, code: -32600, id: "null", says: `a request needs an "id"`},
		{name: "notification with an id", body: `{"jsonrpc":"2.0","id":3,"method":"notifications/initialized"}`,
			status: 400, kind: rpc, code: -32600, id: "null", says: `a notification (a method starting with "notifications/") has no "id"`},
		{name: "unknown method", body: `{"jsonrpc":"2.0","id":1,"method":"images/make","params":{}}`,
			status: 404, kind: rpc, code: -32601, id: "1", says: `Method not found: "images/make"`},
		{name: "unknown method, string id", body: `{"jsonrpc":"2.0","id":"a-1","method":"resources/delete"}`,
			status: 404, kind: rpc, code: -32601, id: `"a-1"`, says: `Method not found: "resources/delete"`},
		{name: "empty method", body: `{"jsonrpc":"2.0","id":1,"method":""}`, status: 404, kind: rpc, code: -32601, id: "1", says: `Method not found: ""`},
		{name: "unreadable method", body: `{"jsonrpc":"2.0","id":1,"method":"é\u0000` + strings.Repeat("m", 100) + `"}`,
			status: 404, kind: rpc, code: -32601, id: "1", says: "Method not found: this server has no such method"},
		{name: "unknown notification", body: `{"jsonrpc":"2.0","method":"notifications/elicitation/complete","params":{}}`, status: 202, kind: accepted},
		{name: "initialized", body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, status: 202, kind: accepted},
		{name: "notification, params of the wrong type", body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":5}`,
			status: 400, kind: rpc, code: -32602, id: "null", says: `Invalid params: "params" must be an object, not a number`},
		{name: "notification, a member of the wrong type", body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{}}}`,
			status: 202, kind: accepted},
		{name: "notification without its params", body: `{"jsonrpc":"2.0","method":"notifications/progress"}`,
			status: 400, kind: rpc, code: -32602, id: "null", says: `Invalid params: notifications/progress needs "params"`},
		{name: "params a number", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":5}`,
			status: 200, kind: rpc, code: -32602, id: "1", says: `Invalid params: "params" must be an object, not a number`},
		{name: "params an array", body: `{"jsonrpc":"2.0","id":"l","method":"tools/list","params":[]}`,
			status: 200, kind: rpc, code: -32602, id: `"l"`, says: `"params" must be an object, not an array`},
		{name: "params a string", body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}`,
			status: 200, kind: rpc, code: -32602, id: "1", says: `"params" must be an object, not a string`},
		{name: "tools/call without params", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call"}`,
			status: 200, kind: rpc, code: -32602, id: "7", says: `Invalid params: tools/call needs "params"`},
		{name: "tools/call, params null", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":null}`,
			status: 200, kind: rpc, code: -32602, id: "7", says: `Invalid params: tools/call needs "params"`},
		{name: "a params member of the wrong type", body: `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":5}}`,
			status: 200, kind: rpc, code: -32602, id: "8"},
		{name: "response", body: `{"jsonrpc":"2.0","id":1,"result":{}}`,
			status: 400, kind: rpc, code: -32600, id: "null", says: "this server sends no requests, so it takes no responses"},
		{name: "response with a malformed error", body: `{"jsonrpc":"2.0","id":"x","error":5}`,
			status: 400, kind: rpc, code: -32600, id: "null", says: "takes no responses"},
		{name: "request with an error member", body: `{"jsonrpc":"2.0","id":1,"method":"ping","error":5}`,
			status: 400, kind: rpc, code: -32600, id: "null", says: `a request or a notification has no "result" or "error"`},
		{name: "ping", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, status: 200, kind: result},
		{name: "ping, params null", body: `{"jsonrpc":"2.0","id":2,"method":"ping","params":null}`, status: 200, kind: result},

		{name: "GET", method: "GET", header: map[string]string{"Accept": "text/event-stream", "Content-Type": "-"}, status: 405, kind: standard, says: "Method GET is not allowed"},
		{name: "DELETE", method: "DELETE", header: map[string]string{"Mcp-Session-Id": "abc", "Content-Type": "-"}, status: 405, kind: standard, says: "Method DELETE is not allowed"},
		{name: "PUT", method: "PUT", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, status: 405, kind: standard, says: "send JSON-RPC messages with POST"},
		{name: "text/plain", header: map[string]string{"Content-Type": "text/plain"}, body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
			status: 415, kind: standard, says: `Unsupported Content-Type "text/plain": send application/json`},
		{name: "no Content-Type", header: map[string]string{"Content-Type": "-"}, body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
			status: 415, kind: standard, says: "Content-Type is missing"},
		{name: "JSON with a charset", header: map[string]string{"Content-Type": "application/json; charset=utf-8"}, body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
			status: 200, kind: result},
		{name: "Accept without event streams", header: map[string]string{"Accept": "application/json"}, body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
			status: 406, kind: standard, says: "Accept must list both application/json and text/event-stream"},
		{name: "no Accept", header: map[string]string{"Accept": "-"}, body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, status: 406, kind: standard, says: "Accept"},
		{name: "Accept anything", header: map[string]string{"Accept": "*/*"}, body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, status: 200, kind: result},
		{name: "unknown protocol version", header: map[string]string{"Mcp-Protocol-Version": "1999-01-01"}, body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
			status: 400, kind: standard, says: `Mcp-Protocol-Version "1999-01-01" is not a supported protocol version`},
		{name: "Last-Event-ID", header: map[string]string{"Last-Event-ID": "0_1"}, body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
			status: 400, kind: standard, says: "Last-Event-ID resumes a stream"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			req, err := http.NewRequest(method, s.srv.URL, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer all")
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range tc.header {
				if v == "-" {
					req.Header.Del(k)
				} else {
					req.Header.Set(k, v)
				}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if tc.kind == accepted {
				if len(body) != 0 {
					t.Fatalf("a body with 202: %q", body)
				}
				return
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q, body %q", ct, body)
			}
			var answer struct {
				JSONRPC    string          `json:"jsonrpc"`
				ID         json.RawMessage `json:"id"`
				Result     json.RawMessage `json:"result"`
				Error      json.RawMessage `json:"error"` // an object in JSON-RPC, a string in the standard body
				Message    string          `json:"message"`
				StatusCode int             `json:"statusCode"`
			}
			if err := json.Unmarshal(body, &answer); err != nil {
				t.Fatalf("the answer %q is not JSON: %v", body, err)
			}
			switch tc.kind {
			case result:
				if answer.JSONRPC != "2.0" || answer.Result == nil || answer.Error != nil {
					t.Fatalf("answer %s, want a JSON-RPC result", body)
				}
			case rpc:
				var e struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				}
				if answer.JSONRPC != "2.0" || json.Unmarshal(answer.Error, &e) != nil || e.Code != tc.code || string(answer.ID) != tc.id ||
					!strings.Contains(e.Message, tc.says) {
					t.Fatalf("answer %s, want JSON-RPC error %d with id %s saying %q", body, tc.code, tc.id, tc.says)
				}
			case standard:
				if answer.JSONRPC != "" || answer.StatusCode != tc.status || !strings.Contains(answer.Message, tc.says) {
					t.Fatalf("answer %s, want the standard error body saying %q", body, tc.says)
				}
				if tc.status == http.StatusMethodNotAllowed && resp.Header.Get("Allow") != http.MethodPost {
					t.Fatalf("Allow %q, want POST", resp.Header.Get("Allow"))
				}
			}
		})
	}
	if got := s.received(); len(got) != 0 {
		t.Fatalf("the router was called: %+v", got)
	}
}

// TestPlainGuard: a plain-text error answered behind the guard goes out
// as a JSON-RPC error of the same status, with a null id; other answers,
// streamed ones included, pass unchanged. (After the checks before it,
// the SDK is not known to answer in plain text: a stand-in does.)
func TestPlainGuard(t *testing.T) {
	tests := []struct {
		name    string
		inner   http.HandlerFunc
		status  int
		code    int // 0: passed unchanged
		body    string
		message string
	}{
		{name: "a 400 in plain text", inner: func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "malformed payload", http.StatusBadRequest)
		},
			status: 400, code: codeInvalidRequest, message: "Invalid Request: malformed payload"},
		{name: "a 500 in plain text", inner: func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "failed connection", http.StatusInternalServerError)
		},
			status: 500, code: codeInternalError, message: "Internal error: failed connection"},
		{name: "a long text", inner: func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, strings.Repeat("x", 10_000), http.StatusBadRequest)
		},
			status: 400, code: codeInvalidRequest, message: "Invalid Request: " + strings.Repeat("x", maxPlainText)},
		{name: "a JSON error", inner: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"m"}}`)
		}, status: 400, body: `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"m"}}`},
		{name: "a streamed answer", inner: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message\ndata: {}\n\n")
			http.NewResponseController(w).Flush()
			io.WriteString(w, "event: message\ndata: {}\n\n")
		}, status: 200, body: "event: message\ndata: {}\n\nevent: message\ndata: {}\n\n"},
		{name: "an empty 202", inner: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) }, status: 202},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				g := &plainGuard{ResponseWriter: w}
				tc.inner(g, r)
				g.finish(r)
			}))
			defer srv.Close()
			resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			a, err := readAnswerOrRaw(resp)
			if err != nil {
				t.Fatal(err)
			}
			if a.status != tc.status {
				t.Fatalf("status %d, want %d: %s", a.status, tc.status, a.raw)
			}
			if tc.code == 0 {
				if string(a.raw) != tc.body {
					t.Fatalf("body %q, want it unchanged: %q", a.raw, tc.body)
				}
				return
			}
			if a.header.Get("Content-Type") != "application/json" || a.Error == nil || a.Error.Code != tc.code ||
				string(a.ID) != "null" || a.Error.Message != tc.message {
				t.Fatalf("answer %s (Content-Type %q), want JSON-RPC %d %q with a null id", a.raw, a.header.Get("Content-Type"), tc.code, tc.message)
			}
		})
	}
}

// readAnswerOrRaw reads an answer, decoded when it is JSON.
func readAnswerOrRaw(resp *http.Response) (*rpcAnswer, error) {
	defer resp.Body.Close()
	a := &rpcAnswer{status: resp.StatusCode, header: resp.Header}
	var err error
	if a.raw, err = io.ReadAll(resp.Body); err != nil {
		return nil, err
	}
	json.Unmarshal(a.raw, a)
	return a, nil
}

// TestMethodsServed: every method the server lets through is one the SDK
// serves: a request of it gets an answer of the SDK's (a result or a
// JSON-RPC error, 200), a notification 202; none reaches the guard.
func TestMethodsServed(t *testing.T) {
	s := newSite(t)
	for name := range methods {
		t.Run(name, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":1,"method":` + quote(name) + `,"params":{}}`
			want := http.StatusOK
			if strings.HasPrefix(name, notificationPrefix) {
				body, want = `{"jsonrpc":"2.0","method":`+quote(name)+`,"params":{}}`, http.StatusAccepted
			}
			resp := s.post("all", body, nil)
			got, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, want, got)
			}
			if want == http.StatusOK && !bytes.Contains(got, []byte(`"id":1`)) {
				t.Fatalf("answer %s is not the SDK's answer to the request", got)
			}
		})
	}
}
