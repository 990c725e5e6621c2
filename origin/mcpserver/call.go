package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pictorhq/pictor/origin/api"
	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apierr"
)

// maxAnswerBytes bounds a REST answer a tool relays (a page of templates
// holds their HTML).
const maxAnswerBytes = 16 << 20

// answer is an in-memory response writer that keeps at most limit bytes
// of the body: past it, the body is dropped and over is set.
type answer struct {
	status int
	header http.Header
	body   []byte
	limit  int
	over   bool
}

var _ http.ResponseWriter = (*answer)(nil)

func newAnswer(limit int) *answer { return &answer{header: http.Header{}, limit: limit} }

func (a *answer) Header() http.Header { return a.header }

func (a *answer) WriteHeader(code int) {
	if a.status == 0 && code >= 200 { // 1xx are interim
		a.status = code
	}
}

func (a *answer) Write(p []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	switch {
	case a.over:
	case len(a.body)+len(p) > a.limit:
		a.over, a.body = true, nil
	default:
		a.body = append(a.body, p...)
	}
	return len(p), nil
}

// Flush lets handlers that flush run; everything is kept until the end.
func (a *answer) Flush() {}

func (a *answer) code() int {
	if a.status == 0 {
		return http.StatusOK
	}
	return a.status
}

func (a *answer) ok() bool { return a.code() >= 200 && a.code() < 300 }

// do runs one request through the router for c, as REST would receive
// it: same request id, remote address and forwarding header, the caller
// set with api.WithCaller, a JSON body when body is not nil.
func (s *Server) do(ctx context.Context, c *caller, method, path string, query url.Values, body []byte, limit int) (*answer, error) {
	target := path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	r, err := http.NewRequestWithContext(api.WithCaller(ctx, c.principal), method, target, rd)
	if err != nil {
		return nil, fmt.Errorf("mcp request %s %s: %w", method, target, err)
	}
	if body == nil {
		r.Body = http.NoBody // as a server hands a handler a request without one
	} else {
		r.Header.Set("Content-Type", "application/json")
	}
	r.RemoteAddr, r.Host = c.remoteAddr, c.host
	r.RequestURI = target
	r.Header.Set(contract.HeaderRequestID, c.requestID)
	if c.forwarded != "" {
		r.Header.Set("X-Forwarded-For", c.forwarded)
	}
	a := newAnswer(limit)
	s.cfg.API.ServeHTTP(a, r)
	return a, nil
}

// result is a tool's answer and the status it stands for (the REST
// answer's, or the one REST would have given), for metrics and logs.
type result struct {
	*mcp.CallToolResult
	status int
	cause  error // of a server error of the tool's own, logged
}

// success relays a JSON answer: the same JSON as structured content and
// as text.
func success(body []byte) result {
	body = bytes.TrimSpace(body)
	return result{CallToolResult: &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(body)}},
		StructuredContent: json.RawMessage(body),
	}, status: http.StatusOK}
}

// relay turns a REST answer into the tool's result: its JSON object for a
// success, otherwise a tool error.
func (s *Server) relay(a *answer, c *caller) result {
	if a.over {
		return failure(apierr.New(http.StatusRequestEntityTooLarge,
			"The answer is larger than %d MiB; ask for less (a smaller count)", a.limit>>20), c.requestID)
	}
	if !a.ok() {
		return s.restError(a, c)
	}
	if !isObject(a.body) {
		return failure(apierr.Internal(fmt.Errorf("REST answered %d with %q, not a JSON object", a.code(), truncate(a.body, 200))), referenceOf(a, c))
	}
	return success(a.body)
}

// restError turns a REST error answer into a tool error whose structured
// content is the REST error body.
func (s *Server) restError(a *answer, c *caller) result {
	var body apierr.Body
	raw := bytes.TrimSpace(a.body)
	if !isObject(raw) || json.Unmarshal(raw, &body) != nil || body.StatusCode == 0 {
		body = apierr.Body{Error: http.StatusText(a.code()), Message: strings.TrimSpace(string(truncate(raw, 500))), StatusCode: a.code()}
		raw, _ = json.Marshal(body)
	}
	body.StatusCode = a.code()
	return errorResult(body, raw, a.header.Get("Retry-After"), referenceOf(a, c))
}

// failure is a tool error the tool itself reports, in the REST error
// format (the REST message and validation errors for an *apierr.Error).
func failure(err error, reference string) result {
	e := apierr.From(err)
	body := e.Body()
	raw, _ := json.Marshal(body)
	res := errorResult(body, raw, e.Header.Get("Retry-After"), reference)
	if e.Status >= 500 {
		res.cause = err
	}
	return res
}

// errorResult words a REST error for a model: the message and each
// validation error as "path: message"; which limit, for a 429; only a
// reference, for a server error.
func errorResult(body apierr.Body, raw []byte, retryAfter, reference string) result {
	var text strings.Builder
	switch {
	case body.StatusCode >= 500:
		fmt.Fprintf(&text, "internal error, reference %s", reference)
	case body.StatusCode == http.StatusTooManyRequests:
		text.WriteString(body.Message)
		if retryAfter != "" {
			fmt.Fprintf(&text, " (retry after %s seconds)", retryAfter)
		}
	default:
		text.WriteString(body.Message)
		for _, f := range body.ValidationErrors {
			fmt.Fprintf(&text, "\n%s: %s", f.Path, f.Message)
		}
	}
	return result{CallToolResult: &mcp.CallToolResult{
		IsError:           true,
		Content:           []mcp.Content{&mcp.TextContent{Text: text.String()}},
		StructuredContent: json.RawMessage(raw),
	}, status: body.StatusCode}
}

// referenceOf is the request id of an inner answer, the reference a
// server error gives.
func referenceOf(a *answer, c *caller) string {
	if id := a.header.Get(contract.HeaderRequestID); id != "" {
		return id
	}
	return c.requestID
}

func isObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
