package field

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/pictorhq/pictor/origin/contract/apierr"
)

// Errors collects field errors.
type Errors struct{ list []apierr.FieldError }

// Add records that the field at path is invalid.
func (e *Errors) Add(path, format string, args ...any) {
	e.list = append(e.list, apierr.FieldError{Path: path, Message: fmt.Sprintf(format, args...)})
}

// Any reports whether an error was recorded.
func (e *Errors) Any() bool { return len(e.list) > 0 }

// Err returns a 400 naming every recorded field, or nil.
func (e *Errors) Err() error {
	if len(e.list) == 0 {
		return nil
	}
	return apierr.Invalid(e.list...)
}

// List returns the recorded errors.
func (e *Errors) List() []apierr.FieldError { return e.list }

// Object is a request's fields, from a JSON object or a form.
type Object struct {
	json map[string]json.RawMessage
	form url.Values
	// Prefix is prepended to field names in error paths ("variations[2].").
	Prefix string
	// Lenient accepts numbers and booleans written as strings in JSON; form
	// values are always strings and always accepted.
	Lenient bool
}

// FromJSON wraps a decoded JSON object.
func FromJSON(m map[string]json.RawMessage) *Object { return &Object{json: m} }

// FromForm wraps form values.
func FromForm(v url.Values) *Object { return &Object{form: v, Lenient: true} }

// IsForm reports whether the fields came from a form.
func (o *Object) IsForm() bool { return o.form != nil }

// Path returns the error path of the named field.
func (o *Object) Path(name string) string { return o.Prefix + name }

// Keys returns the field names present, sorted.
func (o *Object) Keys() []string {
	var keys []string
	if o.form != nil {
		for k := range o.form {
			keys = append(keys, k)
		}
	} else {
		for k := range o.json {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// Present reports whether the field was sent with a non-null value.
func (o *Object) Present(name string) bool {
	if o.form != nil {
		_, ok := o.form[name]
		return ok
	}
	raw, ok := o.json[name]
	return ok && !isNull(raw)
}

// Raw returns the JSON of a field (a form value is returned as a JSON string).
func (o *Object) Raw(name string) (json.RawMessage, bool) {
	if o.form != nil {
		vs, ok := o.form[name]
		if !ok {
			return nil, false
		}
		b, _ := json.Marshal(vs[len(vs)-1])
		return b, true
	}
	raw, ok := o.json[name]
	if !ok || isNull(raw) {
		return nil, false
	}
	return raw, true
}

// FormValues returns every value of a repeated form field (nil for JSON).
func (o *Object) FormValues(name string) []string {
	if o.form == nil {
		return nil
	}
	return o.form[name]
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// scalar returns the text of a field and whether it was a JSON string.
func (o *Object) scalar(name string) (text string, quoted, ok bool) {
	if o.form != nil {
		vs, ok := o.form[name]
		if !ok {
			return "", false, false
		}
		return vs[len(vs)-1], true, true
	}
	raw, ok := o.json[name]
	if !ok || isNull(raw) {
		return "", false, false
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", false, false
		}
		return s, true, true
	}
	return string(raw), false, true
}

// String reads a string field. ok is false when it is absent or null, or
// invalid (then an error is recorded).
func (o *Object) String(errs *Errors, name string) (v string, ok bool) {
	text, quoted, present := o.scalar(name)
	if !present {
		return "", false
	}
	if !quoted {
		errs.Add(o.Path(name), "must be a string")
		return "", false
	}
	return text, true
}

// Bool reads a boolean field. Lenient objects also take "true"/"false",
// "1"/"0" and "on"/"off" written as strings or numbers.
func (o *Object) Bool(errs *Errors, name string) (v, ok bool) {
	text, quoted, present := o.scalar(name)
	if !present {
		return false, false
	}
	if !o.Lenient && (quoted || (text != "true" && text != "false")) {
		errs.Add(o.Path(name), "must be a boolean")
		return false, false
	}
	switch strings.ToLower(strings.TrimSpace(text)) {
	case "true", "1", "on":
		return true, true
	case "false", "0", "off":
		return false, true
	}
	errs.Add(o.Path(name), "must be a boolean")
	return false, false
}

// Int reads an integer field within [min, max].
func (o *Object) Int(errs *Errors, name string, min, max int64) (v int64, ok bool) {
	f, ok := o.number(errs, name)
	if !ok {
		return 0, false
	}
	if f != math.Trunc(f) {
		errs.Add(o.Path(name), "must be an integer")
		return 0, false
	}
	if f < float64(min) || f > float64(max) {
		errs.Add(o.Path(name), "must be between %d and %d", min, max)
		return 0, false
	}
	return int64(f), true
}

// Float reads a number field within [min, max].
func (o *Object) Float(errs *Errors, name string, min, max float64) (v float64, ok bool) {
	f, ok := o.number(errs, name)
	if !ok {
		return 0, false
	}
	if f < min || f > max {
		errs.Add(o.Path(name), "must be between %s and %s", fmtFloat(min), fmtFloat(max))
		return 0, false
	}
	return f, true
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func (o *Object) number(errs *Errors, name string) (float64, bool) {
	text, quoted, present := o.scalar(name)
	if !present {
		return 0, false
	}
	if quoted && !o.Lenient {
		errs.Add(o.Path(name), "must be a number")
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
	if errors.Is(err, strconv.ErrRange) {
		// A number too large for a float64 is ±Inf here, and out of
		// every field's range: the caller says which range.
		return f, true
	}
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		errs.Add(o.Path(name), "must be a number")
		return 0, false
	}
	return f, true
}

// StringArray reads an array of strings. In a form the field may be repeated
// or hold a JSON array.
func (o *Object) StringArray(errs *Errors, name string) (v []string, ok bool) {
	if o.form != nil {
		vs, present := o.form[name]
		if !present {
			return nil, false
		}
		if len(vs) == 1 && strings.HasPrefix(strings.TrimSpace(vs[0]), "[") {
			return o.decodeStrings(errs, name, []byte(vs[0]))
		}
		return vs, true
	}
	raw, present := o.json[name]
	if !present || isNull(raw) {
		return nil, false
	}
	return o.decodeStrings(errs, name, raw)
}

func (o *Object) decodeStrings(errs *Errors, name string, raw []byte) ([]string, bool) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		errs.Add(o.Path(name), "must be an array of strings")
		return nil, false
	}
	out := make([]string, 0, len(items))
	valid := true
	for i, item := range items {
		var s string
		if err := json.Unmarshal(item, &s); err != nil || isNull(item) {
			errs.Add(fmt.Sprintf("%s[%d]", o.Path(name), i), "must be a string")
			valid = false
			continue
		}
		out = append(out, s)
	}
	return out, valid
}

// JSON decodes a field holding a JSON value (in a form: a JSON-encoded
// string) into dst.
func (o *Object) JSON(errs *Errors, name string, dst any, what string) bool {
	var raw []byte
	if o.form != nil {
		vs, present := o.form[name]
		if !present {
			return false
		}
		raw = []byte(vs[len(vs)-1])
	} else {
		r, present := o.json[name]
		if !present || isNull(r) {
			return false
		}
		raw = r
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		errs.Add(o.Path(name), "must be %s", what)
		return false
	}
	return true
}

// Body limits and decoding.

// DecodeJSON reads a JSON object body of at most maxBytes. It answers 415 for
// a non-JSON content type, 413 when the body is too large and 400 when it is
// not a JSON object.
func DecodeJSON(w http.ResponseWriter, r *http.Request, maxBytes int64) (*Object, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || !isJSONType(mt) {
			return nil, unsupported(ct, "application/json")
		}
	}
	return decodeJSONBody(w, r, maxBytes)
}

func isJSONType(mt string) bool {
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

func unsupported(ct string, want string) error {
	return apierr.New(http.StatusUnsupportedMediaType, "Unsupported Content-Type %q: send %s", ct, want)
}

func decodeJSONBody(w http.ResponseWriter, r *http.Request, maxBytes int64) (*Object, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBytes))
	if err != nil {
		return nil, bodyError(err, maxBytes, "request body")
	}
	return ParseJSON(body)
}

// ParseJSON parses a JSON object.
func ParseJSON(body []byte) (*Object, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, apierr.BadRequest("Request body must be a JSON object")
	}
	var m map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if err := dec.Decode(&m); err != nil {
		return nil, apierr.BadRequest("Malformed JSON: %s", jsonProblem(err))
	}
	if dec.More() {
		return nil, apierr.BadRequest("Malformed JSON: unexpected data after the object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, apierr.BadRequest("Malformed JSON: unexpected data after the object")
	}
	return FromJSON(m), nil
}

func jsonProblem(err error) string {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Sprintf("%s at offset %d", syn.Error(), syn.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of input"
	}
	return err.Error()
}

// DecodeAny reads a JSON, multipart or URL-encoded body of at most maxBytes.
func DecodeAny(w http.ResponseWriter, r *http.Request, maxBytes int64) (*Object, error) {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return decodeJSONBody(w, r, maxBytes)
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return nil, unsupported(ct, "application/json, multipart/form-data or application/x-www-form-urlencoded")
	}
	switch {
	case isJSONType(mt):
		return decodeJSONBody(w, r, maxBytes)
	case mt == "application/x-www-form-urlencoded":
		return decodeURLEncoded(w, r, maxBytes)
	case mt == "multipart/form-data":
		return decodeMultipart(w, r, maxBytes, params["boundary"])
	}
	return nil, unsupported(ct, "application/json, multipart/form-data or application/x-www-form-urlencoded")
}

// bodyError turns a failed body read into its answer. A body that did not
// arrive in time (the router's minimum transfer rate, or any read deadline)
// is apierr.ErrBodyTimeout, which apierr answers with 408: never a 400.
func bodyError(err error, maxBytes int64, what string) error {
	var ae *apierr.Error
	var tooBig *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.Is(err, apierr.ErrBodyTimeout):
		return err
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("%w: %w", apierr.ErrBodyTimeout, err)
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &tooBig):
		return apierr.New(http.StatusRequestEntityTooLarge, "Request body is larger than %d bytes", maxBytes)
	case errors.Is(err, multipart.ErrMessageTooLarge):
		// NextPart's only limit a body within maxBytes can reach.
		return apierr.New(http.StatusRequestEntityTooLarge, "A part of the multipart body has more than %d header lines", MaxPartHeaders)
	}
	e := apierr.BadRequest("Malformed %s", what)
	e.Cause = err
	return e
}
