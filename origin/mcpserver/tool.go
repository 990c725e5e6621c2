package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/logging"
	"github.com/pictorhq/pictor/origin/perm"
)

// tool is one MCP tool and how it runs.
type tool struct {
	name, title, description string
	// twin is the REST route the tool runs ("" for none) and permission
	// what it needs; both are documentation, the router enforces them.
	twin       string
	permission perm.Permission
	input      *jsonschema.Schema
	output     *jsonschema.Schema // nil: no structured content
	hints      hints
	run        func(ctx context.Context, s *Server, c *caller, args args) result
}

// hints are the tool's annotations.
type hints struct {
	readOnly, destructive, idempotent, openWorld bool
}

func (t *tool) mcpTool() *mcp.Tool {
	mt := &mcp.Tool{Name: t.name, Title: t.title, Description: t.description, InputSchema: t.input,
		Annotations: &mcp.ToolAnnotations{
			Title:           t.title,
			ReadOnlyHint:    t.hints.readOnly,
			DestructiveHint: jsonschema.Ptr(t.hints.destructive),
			IdempotentHint:  t.hints.idempotent,
			OpenWorldHint:   jsonschema.Ptr(t.hints.openWorld),
		}}
	if t.output != nil {
		// A tool error's structured content is the REST error body.
		mt.OutputSchema = &jsonschema.Schema{Type: "object", AnyOf: []*jsonschema.Schema{t.output, errorBodySchema}}
	}
	return mt
}

// handler runs t for the verified caller of the request. The SDK does not
// validate the arguments (Server.AddTool): REST does.
func (s *Server) handler(t *tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		start := time.Now()
		c := callerOf(req)
		if c == nil { // cannot happen behind ServeHTTP
			return nil, errors.New("tool call without a verified caller")
		}
		ctx = logging.WithRequestID(ctx, c.requestID)
		var res result
		if a, err := arguments(req.Params.Arguments); err != nil {
			res = failure(err, c.requestID)
		} else {
			res = t.run(ctx, s, c, a)
		}
		s.calls.WithLabelValues(t.name, outcome(res.status)).Inc()
		level := slog.LevelInfo
		if res.status >= 500 {
			level = slog.LevelError
		}
		orgID := ""
		if c.principal.Org != nil {
			orgID = c.principal.Org.ID
		}
		attrs := []slog.Attr{slog.String("tool", t.name), slog.Int("status", res.status),
			slog.String("org", orgID), slog.String("key", c.principal.KeyID),
			slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000)}
		if res.cause != nil {
			attrs = append(attrs, slog.String("cause", res.cause.Error()))
		}
		slog.LogAttrs(ctx, level, "mcp tool call", attrs...)
		return res.CallToolResult, nil
	}
}

func outcome(status int) string {
	switch {
	case status < 300:
		return "ok"
	case status == http.StatusForbidden:
		return "forbidden"
	case status == http.StatusTooManyRequests:
		return "rate_limited"
	case status < 500:
		return "invalid"
	}
	return "failed"
}

// args are a tool call's arguments, each as sent.
type args map[string]json.RawMessage

// arguments decodes a call's arguments: a JSON object, or nothing.
func arguments(raw json.RawMessage) (args, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return args{}, nil
	}
	if raw[0] != '{' {
		return nil, apierr.BadRequest("The arguments must be a JSON object of the tool's parameters, not %s", kind(raw))
	}
	var a args
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, apierr.BadRequest("The arguments are not a valid JSON object: %v", err)
	}
	return a, nil
}

// kind names the JSON type of a value, for messages.
func kind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// sent reports whether an argument carries a value (null is none).
func (a args) sent(name string) bool {
	raw, ok := a[name]
	return ok && string(bytes.TrimSpace(raw)) != "null"
}

// unknown names the arguments not in allowed: they are the tool's own,
// not a REST body whose unknown fields REST ignores.
func (a args) unknown(allowed ...string) []apierr.FieldError {
	var names []string
	for name := range a {
		if !slices.Contains(allowed, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var out []apierr.FieldError
	for _, name := range names {
		out = append(out, apierr.FieldError{Path: name, Message: fmt.Sprintf("is not an argument of this tool (it takes %s)", list(allowed))})
	}
	return out
}

// only refuses arguments not in allowed.
func (a args) only(allowed ...string) error {
	if fields := a.unknown(allowed...); len(fields) > 0 {
		return apierr.Invalid(fields...)
	}
	return nil
}

func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// refusals collects the refused arguments of a call, to report them
// together before anything runs.
type refusals []apierr.FieldError

func (r *refusals) add(fields ...*apierr.FieldError) {
	for _, f := range fields {
		if f != nil {
			*r = append(*r, *f)
		}
	}
}

func (r refusals) err() error {
	if len(r) == 0 {
		return nil
	}
	return apierr.Invalid(r...)
}

// invalid is a refused argument.
func invalid(name, format string, v ...any) *apierr.FieldError {
	return &apierr.FieldError{Path: name, Message: fmt.Sprintf(format, v...)}
}

// id returns the string argument that names a resource in the path.
func (a args) id(name string) (string, *apierr.FieldError) {
	if !a.sent(name) {
		return "", invalid(name, "is required")
	}
	var s string
	if err := json.Unmarshal(a[name], &s); err != nil {
		return "", invalid(name, "must be a string, not %s", kind(a[name]))
	}
	if strings.TrimSpace(s) == "" {
		return "", invalid(name, "must not be blank")
	}
	return s, nil
}

// flag returns a boolean argument the tool itself reads.
func (a args) flag(name string) (bool, *apierr.FieldError) {
	if !a.sent(name) {
		return false, nil
	}
	var v bool
	if err := json.Unmarshal(a[name], &v); err != nil {
		return false, invalid(name, "must be a boolean, not %s", kind(a[name]))
	}
	return v, nil
}

// text returns an argument as a path or query value: a string as it is,
// any other JSON value as its text, for REST to judge.
func (a args) text(name string) string {
	raw := bytes.TrimSpace(a[name])
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// body returns the arguments but the named ones as a JSON object.
func (a args) body(except ...string) []byte {
	m := make(map[string]json.RawMessage, len(a))
	for k, v := range a {
		if !slices.Contains(except, k) {
			m[k] = v
		}
	}
	b, _ := json.Marshal(m) // raw values that came in a JSON object
	return b
}

// content returns the content argument: the request body, an object.
func (a args) content() ([]byte, *apierr.FieldError) {
	if !a.sent("content") {
		return nil, invalid("content", "is required: the request body, a JSON object")
	}
	raw := bytes.TrimSpace(a["content"])
	if raw[0] != '{' {
		return nil, invalid("content", "must be a JSON object holding the request body, not %s", kind(raw))
	}
	return raw, nil
}

// bodyFrom says where a route's request body comes from.
type bodyFrom int

const (
	noBody      bodyFrom = iota
	fromContent          // the content argument
	fromArgs             // the arguments themselves, less the path's
)

// route is a tool's REST twin.
type route struct {
	method, path string // path may hold {id}
	id           string // the argument that fills {id}
	query        []string
	body         bodyFrom
}

// restTool returns a tool that runs its route and relays the answer.
func restTool(t tool, rt route) tool {
	t.twin = rt.method + " " + rt.path
	t.run = func(ctx context.Context, s *Server, c *caller, a args) result {
		var refused refusals
		path := rt.path
		own := slices.Clone(rt.query)
		if rt.id != "" {
			own = append(own, rt.id)
			id, f := a.id(rt.id)
			refused.add(f)
			path = strings.Replace(path, "{id}", url.PathEscape(id), 1)
		}
		var body []byte
		switch rt.body {
		case noBody:
			refused = append(refused, a.unknown(own...)...)
		case fromContent:
			var f *apierr.FieldError
			body, f = a.content()
			refused.add(f)
			refused = append(refused, a.unknown(append(own, "content")...)...)
		case fromArgs:
			body = a.body(own...)
		}
		if err := refused.err(); err != nil {
			return failure(err, c.requestID)
		}
		query := url.Values{}
		for _, name := range rt.query {
			if a.sent(name) {
				query.Set(name, a.text(name))
			}
		}
		ans, err := s.do(ctx, c, rt.method, path, query, body, maxAnswerBytes)
		if err != nil {
			return failure(err, c.requestID)
		}
		if ans.ok() && ans.code() == http.StatusNoContent {
			return result{CallToolResult: &mcp.CallToolResult{
				Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("Done: %s %s answered %d %s.", rt.method, path, ans.code(), http.StatusText(ans.code()))}},
			}, status: http.StatusNoContent}
		}
		return s.relay(ans, c)
	}
	return t
}
