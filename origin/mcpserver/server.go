package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	mcpauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"

	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/logging"
	"github.com/pictorhq/pictor/origin/imageparams"
)

// Config wires the MCP server.
type Config struct {
	// API is the origin's router (an *api.Router): every tool runs its
	// REST twin through it with api.WithCaller.
	API http.Handler
	// Verify turns a bearer token into its caller. An error that
	// IsInvalidToken reports is the token's fault (401); any other is a
	// server failure (500, or the status of an *apierr.Error in its chain).
	Verify func(ctx context.Context, token string) (*auth.Principal, error)
	// Challenge is the WWW-Authenticate value of a 401; err is nil when
	// no token was sent.
	Challenge func(err error) string
	// IsInvalidToken reports whether a Verify error is the token's fault.
	IsInvalidToken func(error) bool
	// Version is the server version shown to clients.
	Version string
	// MaxImageBytes bounds the images include_image returns with one tool
	// result, all together; 0 is the default (1 MiB).
	MaxImageBytes int
	// Registerer receives the tool call metrics; nil skips them.
	Registerer prometheus.Registerer
}

// DefaultMaxImageBytes is MaxImageBytes's default.
const DefaultMaxImageBytes = 1 << 20

// DefaultConfig returns the defaults; API, Verify, Challenge and
// IsInvalidToken remain to be set.
func DefaultConfig() Config {
	return Config{Version: "dev", MaxImageBytes: DefaultMaxImageBytes}
}

// Validate reports the first field that cannot work.
func (c Config) Validate() error {
	switch {
	case c.API == nil:
		return errors.New("mcpserver: API is required")
	case c.Verify == nil:
		return errors.New("mcpserver: Verify is required")
	case c.Challenge == nil:
		return errors.New("mcpserver: Challenge is required")
	case c.IsInvalidToken == nil:
		return errors.New("mcpserver: IsInvalidToken is required")
	case c.MaxImageBytes <= 0:
		return fmt.Errorf("mcpserver: MaxImageBytes %d must be positive", c.MaxImageBytes)
	}
	return nil
}

// Message limits. The SDK reads and decodes a message several times over:
// a 7 MiB create_image call allocates ≈ 270 MiB, its heap peaking ≈ 50-80
// MiB above the rest (REST's decoding of the same body: ≈ 7 bytes per
// byte). So messages are bounded before any decode, and large ones are
// handled a few at a time: the budget holds two of the largest.
const (
	// maxImageBody is REST's image creation body limit (images.MaxBody,
	// which this package does not import: it links libvips).
	maxImageBody = imageparams.MaxHTMLBytes + imageparams.MaxCSSBytes + 1<<20
	// MaxMessageBytes bounds an MCP message: the largest REST body a tool
	// sends (an image or a template, 7 MiB; a batch over MCP is held to it
	// too, not to REST's 32 MiB) inside its JSON-RPC envelope.
	MaxMessageBytes = maxImageBody + 64<<10
	// largeMessage is the size from which a message takes its size from
	// the decode budget.
	largeMessage = 64 << 10
	// decodeBudget bounds the bytes of large messages being handled at
	// once; a large message that does not fit is answered 503.
	decodeBudget = 16 << 20
)

// maxToken bounds the bearer token we are willing to verify.
const maxToken = 8 << 10

// Server serves the MCP endpoint.
type Server struct {
	cfg      Config
	mcp      *mcp.Server
	http     http.Handler // the SDK's streamable handler behind the token check
	calls    *prometheus.CounterVec
	decoding *semaphore.Weighted // bytes of the large messages being handled, at most decodeBudget
}

var _ http.Handler = (*Server)(nil)

// New validates cfg and builds the server with every tool.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, decoding: semaphore.NewWeighted(decodeBudget), calls: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pictor_origin_mcp_tool_calls_total",
		Help: "MCP tool calls, by tool and outcome (ok, invalid, forbidden, rate_limited, failed).",
	}, []string{"tool", "outcome"})}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(s.calls); err != nil {
			return nil, fmt.Errorf("mcpserver: register metrics: %w", err)
		}
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "pictor", Title: "Pictor", Version: cfg.Version}, &mcp.ServerOptions{
		Instructions: instructions,
		// Tools only: no logging (deprecated), and the list never changes.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	for _, t := range tools() {
		s.mcp.AddTool(t.mcpTool(), s.handler(t))
	}
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		// Any origin answers any request, and the edge relays plain JSON.
		Stateless:    true,
		JSONResponse: true,
		// Every request carries a bearer token, which a page that rebinds
		// a name to a loopback address cannot send; and the edge forwards
		// the public Host to an origin that may listen on loopback.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        MaxMessageBytes,
		// A client that goes away cancels its tool call, as a REST client
		// that hangs up cancels its request.
		PropagateRequestCancellation: true,
	})
	// The caller, already verified in ServeHTTP, reaches the tool handlers
	// as the SDK's TokenInfo (req.Extra.TokenInfo), which the SDK attaches
	// to every request of the HTTP request it came with.
	s.http = mcpauth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*mcpauth.TokenInfo, error) {
		c := callerFrom(ctx)
		if c == nil {
			return nil, fmt.Errorf("%w: no verified caller", mcpauth.ErrInvalidToken)
		}
		return &mcpauth.TokenInfo{UserID: c.principal.KeyID, Extra: map[string]any{callerExtra: c}}, nil
	}, &mcpauth.RequireBearerTokenOptions{AllowMissingExpiration: true})(streamable)
	return s, nil
}

// instructions tell a model what the server is for.
const instructions = `Pictor renders HTML/CSS, web pages (by URL) and saved templates into images (PNG, JPG, WebP or PDF) and returns permanent image URLs.
Use create_image for HTML/CSS, create_url_image to screenshot a web page, create_templated_image to fill a template saved with create_template, and create_batch_images for up to get_max_batch_size images at once. Pass include_image: true to see the rendered picture.
Each new image consumes one image credit of the organization's plan; check_usage tells how many are left. The tools also manage proxies, storage destinations and OG (social card) configurations. Each tool needs a permission approved when this connection was authorized; a missing one is reported by the tool.`

// caller is who a request to /mcp is for, with what the inner requests
// copy from the outer one.
type caller struct {
	principal  *auth.Principal
	requestID  string
	remoteAddr string
	host       string
	forwarded  string // X-Forwarded-For
}

// callerExtra is the TokenInfo.Extra key of the *caller.
const callerExtra = "pictor.caller"

type callerKey struct{}

func callerFrom(ctx context.Context) *caller {
	c, _ := ctx.Value(callerKey{}).(*caller)
	return c
}

// callerOf returns the caller of a tool call.
func callerOf(req *mcp.CallToolRequest) *caller {
	if req.Extra == nil || req.Extra.TokenInfo == nil {
		return nil
	}
	c, _ := req.Extra.TokenInfo.Extra[callerExtra].(*caller)
	return c
}

// ServeHTTP authenticates every request with its bearer token, refuses
// what the SDK would answer in plain text (protocol.go), then hands the
// message to the SDK.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := logging.RequestID(r.Context())
	if id == "" { // not behind the router, which does this
		id = logging.AcceptRequestID(r.Header.Get(contract.HeaderRequestID))
		r = r.WithContext(logging.WithRequestID(r.Context(), id))
		w.Header().Set(contract.HeaderRequestID, id)
	}
	// Answers are per caller: no cache may keep them.
	w.Header().Set("Cache-Control", "no-store")
	token, ok := bearer(r.Header.Get("Authorization"))
	if !ok {
		s.unauthorized(w, r, nil, "Missing credentials: send an OAuth access token as Authorization: Bearer <token>")
		return
	}
	p, err := s.cfg.Verify(r.Context(), token)
	switch {
	case err != nil && s.cfg.IsInvalidToken(err):
		s.unauthorized(w, r, err, "Invalid access token")
		return
	case err != nil:
		apierr.Write(w, r, fmt.Errorf("verify access token: %w", err))
		return
	case p == nil:
		apierr.Write(w, r, errors.New("verify access token: no principal and no error"))
		return
	}
	if refuseHTTP(w, r) {
		return
	}
	body, e, ok := readMessage(w, r)
	if !ok || checkMethod(w, e) {
		return
	}
	if n := int64(len(body)); n > largeMessage {
		if !s.decoding.TryAcquire(n) {
			w.Header().Set("Retry-After", "1")
			rpcError(w, e.id, http.StatusServiceUnavailable, codeBusy, "Server busy: too many large MCP messages are being handled at once; retry in a second")
			return
		}
		defer s.decoding.Release(n)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	c := &caller{principal: p, requestID: id, remoteAddr: r.RemoteAddr, host: r.Host, forwarded: r.Header.Get("X-Forwarded-For")}
	g := &plainGuard{ResponseWriter: w}
	s.http.ServeHTTP(g, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	g.finish(r)
}

// JSON-RPC 2.0 error codes of a message that cannot be taken.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeBusy           = -32000 // implementation-defined server error
)

// readMessage reads a POST's body, at most MaxMessageBytes, and answers a
// JSON-RPC error itself when it is not one JSON-RPC message the SDK takes
// as it is (the SDK would answer these in plain text, or change the id):
// 413 for a larger body, refused on its Content-Length before any of it
// is read; -32700 for what is not JSON; -32600 for JSON that readEnvelope
// refuses.
func readMessage(w http.ResponseWriter, r *http.Request) ([]byte, envelope, bool) {
	if r.ContentLength > MaxMessageBytes {
		tooLarge(w)
		return nil, envelope{}, false
	}
	body, err := readBody(http.MaxBytesReader(w, r.Body, MaxMessageBytes), r.ContentLength)
	var over *http.MaxBytesError
	switch {
	case errors.As(err, &over):
		tooLarge(w)
		return nil, envelope{}, false
	case err != nil:
		rpcError(w, nil, http.StatusBadRequest, codeParseError, "Parse error: the body could not be read")
		return nil, envelope{}, false
	case !json.Valid(body):
		rpcError(w, nil, http.StatusBadRequest, codeParseError, "Parse error: the body is not valid JSON")
		return nil, envelope{}, false
	}
	e, err := readEnvelope(body)
	if err != nil {
		rpcError(w, nil, http.StatusBadRequest, codeInvalidRequest, "Invalid Request: "+err.Error())
		return nil, envelope{}, false
	}
	return body, e, true
}

// readBody reads r to its end into one buffer: of the declared length
// (plus the byte that finds the end) when it is known (length >= 0),
// else doubling from 64 KiB but never past MaxMessageBytes+1, so that
// reading a body up to the limit allocates at most about twice the limit.
func readBody(r io.Reader, length int64) ([]byte, error) {
	size := 64 << 10
	if length >= 0 {
		size = int(min(length, MaxMessageBytes)) + 1
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			next := make([]byte, len(buf), min(2*cap(buf), MaxMessageBytes+1))
			copy(next, buf)
			buf = next
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case err == io.EOF:
			return buf, nil
		case err != nil:
			return nil, err
		}
	}
}

func tooLarge(w http.ResponseWriter) {
	rpcError(w, nil, http.StatusRequestEntityTooLarge, codeInvalidRequest,
		fmt.Sprintf("Invalid Request: the message is larger than %d bytes (%.2f MiB), the limit of one MCP message", MaxMessageBytes, float64(MaxMessageBytes)/(1<<20)))
}

// rpcError answers a JSON-RPC error for the request of id, null when it
// is not known (raw JSON, nil for null).
func rpcError(w http.ResponseWriter, id json.RawMessage, status, code int, message string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // the id as it came
	enc.Encode(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   any             `json:"error"`
	}{"2.0", id, map[string]any{"code": code, "message": message}})
}

func (s *Server) unauthorized(w http.ResponseWriter, r *http.Request, err error, message string) {
	e := apierr.New(http.StatusUnauthorized, "%s", message).WithHeader("WWW-Authenticate", s.cfg.Challenge(err))
	e.Cause = err
	apierr.Write(w, r, e)
}

// bearer returns the token of an "Authorization: Bearer <token>" header:
// the SDK's own reading of it, and bounded.
func bearer(h string) (string, bool) {
	fields := strings.Fields(h)
	if len(fields) != 2 || !strings.EqualFold(fields[0], "Bearer") || len(fields[1]) > maxToken {
		return "", false
	}
	return fields[1], true
}
