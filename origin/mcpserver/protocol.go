package mcpserver

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pictorhq/pictor/origin/contract/apierr"
)

// Everything the SDK would refuse in plain text (http.Error) is refused
// before it: for the request's method or headers, with the standard error
// body, as the 401 of a missing token; for the message, with a JSON-RPC
// error. What gets past these and is refused by the SDK all the same goes
// out as a JSON-RPC error too (plainGuard).

// method is what the server takes of a JSON-RPC method.
type method struct {
	// params: a message of the method needs "params" (null is none).
	params bool
}

// methods are the methods the SDK serves (its serverMethodInfos, v1.8.0),
// and which of them need params. A method the SDK adds later is refused
// as not found until it is listed here.
var methods = map[string]method{
	"initialize":                       {params: true},
	"ping":                             {},
	"tools/list":                       {},
	"tools/call":                       {params: true},
	"prompts/list":                     {},
	"prompts/get":                      {params: true},
	"resources/list":                   {},
	"resources/templates/list":         {},
	"resources/read":                   {params: true},
	"resources/subscribe":              {params: true},
	"resources/unsubscribe":            {params: true},
	"logging/setLevel":                 {params: true},
	"completion/complete":              {params: true},
	"server/discover":                  {},
	"subscriptions/listen":             {params: true},
	"notifications/initialized":        {},
	"notifications/cancelled":          {},
	"notifications/progress":           {params: true},
	"notifications/roots/list_changed": {},
}

// More JSON-RPC 2.0 error codes.
const (
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternalError  = -32603
)

// checkMethod answers a message whose method the server does not serve,
// or whose params its method cannot take, and reports whether it did: a
// request of an unknown method gets 404 with -32601 (as the SDK answers
// one of the current protocol) and its id; a notification of one is
// accepted (202) and ignored, as JSON-RPC has a server do with a
// notification it does not handle. Params that are not an object (MCP's
// are always one), or missing where the method needs them, get -32602:
// for a request with its id and 200, as the SDK answers params it cannot
// read; for a notification, which has no answer in JSON-RPC, 400 with a
// null id.
func checkMethod(w http.ResponseWriter, e envelope) bool {
	m, known := methods[e.name]
	absent := e.params == nil || string(e.params) == "null"
	var problem string
	switch {
	case !known && e.id == nil:
		w.WriteHeader(http.StatusAccepted)
		return true
	case !known:
		rpcError(w, e.id, http.StatusNotFound, codeMethodNotFound, "Method not found: "+quoted(e.name, "this server has no such method"))
		return true
	case !absent && e.params[0] != '{':
		problem = fmt.Sprintf("\"params\" must be an object, not %s", kind(e.params))
	case absent && m.params:
		problem = fmt.Sprintf("%s needs \"params\", an object", e.name)
	default:
		return false
	}
	status := http.StatusOK
	if e.id == nil {
		status = http.StatusBadRequest
	}
	rpcError(w, e.id, status, codeInvalidParams, "Invalid params: "+problem)
	return true
}

// quoted returns s in quotes when it is short printable ASCII, else
// instead: a name a client sent is shown back only when it can be read.
func quoted(s, instead string) string {
	if len(s) > 64 {
		return instead
	}
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return instead
		}
	}
	return fmt.Sprintf("%q", s)
}

// Headers the streamable HTTP transport reads.
const (
	headerProtocolVersion = "Mcp-Protocol-Version"
	headerLastEventID     = "Last-Event-ID"
)

// refuseHTTP answers, in the standard error body, a request the SDK
// would refuse in plain text for its method or headers alone, and reports
// whether it did: another method than POST (405: stateless, there is no
// stream to GET and no session to DELETE), a body that is not
// application/json (415), an Accept without JSON or without event streams
// (406; the SDK's own reading of Accept), a protocol version the SDK does
// not take, or a Last-Event-ID (400).
func refuseHTTP(w http.ResponseWriter, r *http.Request) bool {
	var e *apierr.Error
	switch ct := r.Header.Get("Content-Type"); {
	case r.Method != http.MethodPost:
		e = apierr.New(http.StatusMethodNotAllowed, "Method %s is not allowed on the MCP endpoint: send JSON-RPC messages with POST (this stateless server has no stream to GET and no session to DELETE)",
			r.Method).WithHeader("Allow", http.MethodPost)
	case ct == "":
		e = apierr.New(http.StatusUnsupportedMediaType, "Content-Type is missing: send application/json")
	case mediaType(ct) != "application/json":
		e = apierr.New(http.StatusUnsupportedMediaType, "Unsupported Content-Type %s: send application/json", quoted(ct, "(unreadable)"))
	case !acceptsBoth(r.Header.Values("Accept")):
		e = apierr.New(http.StatusNotAcceptable, "Accept must list both application/json and text/event-stream")
	case unsupportedVersion(r.Header.Get(headerProtocolVersion)):
		e = apierr.Field(headerProtocolVersion, "%s is not a supported protocol version; supported: %s",
			quoted(r.Header.Get(headerProtocolVersion), "the version given"), strings.Join(mcp.SupportedProtocolVersions(), ", "))
	case len(r.Header.Values(headerLastEventID)) > 0:
		e = apierr.Field(headerLastEventID, "resumes a stream, which this stateless server does not keep: send the request again")
	default:
		return false
	}
	apierr.Write(w, r, e)
	return true
}

func mediaType(v string) string {
	mt, _, err := mime.ParseMediaType(v)
	if err != nil {
		return ""
	}
	return mt
}

// acceptsBoth reads Accept as the SDK does (its streamableAccepts): the
// base types of every listed range, wildcards included.
func acceptsBoth(values []string) bool {
	jsonOK, streamOK := false, false
	for _, value := range values {
		for _, raw := range strings.Split(value, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK && streamOK
}

// unsupportedVersion reports whether the SDK refuses a Mcp-Protocol-Version:
// one it does not list and that sorts before the newest it does (a later
// one it takes as the newest protocol).
func unsupportedVersion(v string) bool {
	supported := mcp.SupportedProtocolVersions()
	return v != "" && !slices.Contains(supported, v) && v < slices.Max(supported)
}

// plainGuard stands between the SDK and the client: an error the SDK
// still answers in plain text goes out as a JSON-RPC error with the same
// status (-32603 for a 5xx, else -32600), the SDK's text as its message
// and a null id. Nothing of the kind is known to get past the checks
// before the SDK; the guard makes sure.
type plainGuard struct {
	http.ResponseWriter
	wrote  bool
	status int    // of the plain-text error being replaced; 0 if none
	text   []byte // its text, at most maxPlainText bytes
}

// maxPlainText bounds what the guard keeps of a plain-text error.
const maxPlainText = 512

func (g *plainGuard) WriteHeader(status int) {
	if !g.wrote && status >= 400 && strings.HasPrefix(g.Header().Get("Content-Type"), "text/plain") {
		g.wrote, g.status = true, status
		return
	}
	g.wrote = true
	g.ResponseWriter.WriteHeader(status)
}

func (g *plainGuard) Write(b []byte) (int, error) {
	if !g.wrote {
		g.WriteHeader(http.StatusOK)
	}
	if g.status != 0 {
		g.text = append(g.text, b[:min(len(b), maxPlainText-len(g.text))]...)
		return len(b), nil
	}
	return g.ResponseWriter.Write(b)
}

// Flush passes on: the SDK streams events when a call asks for them.
func (g *plainGuard) Flush() {
	if g.status != 0 {
		return
	}
	g.wrote = true
	http.NewResponseController(g.ResponseWriter).Flush()
}

func (g *plainGuard) Unwrap() http.ResponseWriter { return g.ResponseWriter }

// finish sends the JSON-RPC error of a plain-text answer the guard held
// back, if there was one.
func (g *plainGuard) finish(r *http.Request) {
	if g.status == 0 {
		return
	}
	slog.WarnContext(r.Context(), "mcp plain-text answer of the SDK sent as JSON-RPC", "status", g.status, "text", string(g.text))
	code := codeInvalidRequest
	prefix := "Invalid Request: "
	if g.status >= 500 {
		code, prefix = codeInternalError, "Internal error: "
	}
	h := g.Header()
	h.Del("Content-Length")
	rpcError(g.ResponseWriter, json.RawMessage("null"), g.status, code, prefix+strings.TrimSpace(string(g.text)))
}
