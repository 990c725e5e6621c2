package apierr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"
)

// FieldError names one invalid request field.
type FieldError struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// Error is an error with a public face.
type Error struct {
	Status  int          // HTTP status code
	Title   string       // the "error" member; defaults to the status text
	Message string       // the "message" member, safe to show to the caller
	Fields  []FieldError // validation_errors, when any
	// Header holds extra response headers (Retry-After, Allow, WWW-Authenticate).
	Header http.Header
	// Cause is logged, never sent.
	Cause error
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%d %s: %v", e.Status, e.Message, e.Cause)
	}
	return fmt.Sprintf("%d %s", e.Status, e.Message)
}

func (e *Error) Unwrap() error { return e.Cause }

// WithHeader returns e with a response header set.
func (e *Error) WithHeader(name, value string) *Error {
	if e.Header == nil {
		e.Header = http.Header{}
	}
	e.Header.Set(name, value)
	return e
}

// Body is the standard error body.
type Body struct {
	Error            string       `json:"error"`
	Message          string       `json:"message"`
	StatusCode       int          `json:"statusCode"`
	ValidationErrors []FieldError `json:"validation_errors,omitempty"`
}

// Body returns the JSON document sent for e.
func (e *Error) Body() Body {
	title := e.Title
	if title == "" {
		title = http.StatusText(e.Status)
	}
	return Body{Error: title, Message: e.Message, StatusCode: e.Status, ValidationErrors: e.Fields}
}

// New returns an error with the given status and public message.
func New(status int, format string, args ...any) *Error {
	return &Error{Status: status, Message: fmt.Sprintf(format, args...)}
}

// BadRequest is a 400 without field details.
func BadRequest(format string, args ...any) *Error {
	return New(http.StatusBadRequest, format, args...)
}

// Invalid is a 400 listing the invalid fields.
func Invalid(fields ...FieldError) *Error {
	msg := "Invalid request"
	if len(fields) > 0 {
		msg = fmt.Sprintf("Invalid request: %s %s", fields[0].Path, fields[0].Message)
		if len(fields) > 1 {
			msg += fmt.Sprintf(" (and %d more)", len(fields)-1)
		}
	}
	return &Error{Status: http.StatusBadRequest, Message: msg, Fields: fields}
}

// Field is a single-field validation error.
func Field(path, format string, args ...any) *Error {
	return Invalid(FieldError{Path: path, Message: fmt.Sprintf(format, args...)})
}

// Unauthorized is a 401 that asks for Basic credentials.
func Unauthorized(message string) *Error {
	return New(http.StatusUnauthorized, "%s", message).WithHeader("WWW-Authenticate", `Basic realm="pictor"`)
}

// Forbidden is a 403.
func Forbidden(format string, args ...any) *Error {
	return New(http.StatusForbidden, format, args...)
}

// NotFound is a 404.
func NotFound(format string, args ...any) *Error {
	return New(http.StatusNotFound, format, args...)
}

// TooManyRequests is a 429 with Retry-After rounded up to whole seconds.
func TooManyRequests(retryAfter time.Duration, format string, args ...any) *Error {
	e := New(http.StatusTooManyRequests, format, args...)
	if retryAfter > 0 {
		secs := int((retryAfter + time.Second - 1) / time.Second)
		e.WithHeader("Retry-After", strconv.Itoa(secs))
	}
	return e
}

// Internal hides cause behind a generic 500, unless cause is marked
// Unavailable: a backing service that could not be reached is a 503 with
// Retry-After wherever the error is turned into an answer.
func Internal(cause error) *Error {
	if isUnavailable(cause) {
		return unavailable(cause)
	}
	return &Error{Status: http.StatusInternalServerError, Message: "Internal error", Cause: cause}
}

func unavailable(cause error) *Error {
	e := &Error{Status: http.StatusServiceUnavailable, Message: "A storage service is unavailable; try again shortly", Cause: cause}
	return e.WithHeader("Retry-After", "2")
}

// ErrBodyTimeout marks a request body that did not arrive in time: slower
// than the origin's minimum transfer rate (package api), or past a read
// deadline. Whoever reads a body wraps its read error with it, and From
// answers it with 408 and closes the connection, since the rest of the body
// is still on it.
var ErrBodyTimeout = errors.New("request body not received in time")

// ErrShuttingDown is the cause with which a server ends the requests still
// running when its shutdown grace is over: Write answers a request whose
// context it canceled with 503 and Retry-After, not as a client gone.
var ErrShuttingDown = errors.New("the server is shutting down")

// From converts any error to an *Error: an *Error in the chain is used as is,
// ErrBodyTimeout becomes 408, a canceled context 499 (logged only), a
// deadline 504, anything else 500.
func From(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	switch {
	case errors.Is(err, ErrBodyTimeout):
		e := &Error{Status: http.StatusRequestTimeout, Message: "The request body was not received in time", Cause: err}
		return e.WithHeader("Connection", "close")
	case errors.Is(err, context.Canceled):
		return &Error{Status: 499, Title: "Client Closed Request", Message: "Request canceled", Cause: err}
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Status: http.StatusGatewayTimeout, Message: "Timed out", Cause: err}
	case isUnavailable(err):
		return unavailable(err)
	}
	return Internal(err)
}

// Unavailable is the mark of an error that says a backing service (the
// record store, the blob store) could not be reached: another try later
// may work, so it is a 503, not a 500. Packages below the HTTP boundary
// (kv, blob) mark their sentinels with it without importing this one.
type Unavailable interface {
	error
	Unavailable() bool
}

func isUnavailable(err error) bool {
	var u Unavailable
	return errors.As(err, &u) && u.Unavailable()
}

// Encode renders err as the standard body and its extra headers.
func Encode(err error) (status int, header http.Header, body []byte) {
	e := From(err)
	body, _ = json.Marshal(e.Body())
	return e.Status, e.Header, body
}

// Write sends err as the standard body and logs it: server errors at error
// level with the cause, client errors at debug level.
func Write(w http.ResponseWriter, r *http.Request, err error) {
	e := From(err)
	if e.Status == 499 && errors.Is(context.Cause(r.Context()), ErrShuttingDown) {
		e = &Error{Status: http.StatusServiceUnavailable, Message: "The server is shutting down; try again", Cause: err}
		e.WithHeader("Retry-After", "1").WithHeader("Connection", "close")
	}
	status, header, body := Encode(e)
	h := w.Header()
	for k, vs := range header {
		h[k] = vs
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	if status == 499 {
		// The client is gone; nothing can be delivered.
		status = http.StatusBadRequest
	}
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
	level := slog.LevelDebug
	if e.Status >= 500 {
		level = slog.LevelError
	}
	attrs := []slog.Attr{slog.Int("status", e.Status), slog.String("message", e.Message)}
	if e.Cause != nil {
		attrs = append(attrs, slog.String("cause", e.Cause.Error()))
	}
	slog.LogAttrs(r.Context(), level, "request failed", attrs...)
}
