package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// envelope is what Pictor reads of a JSON-RPC message before the SDK does:
// the members the SDK routes it by, raw (nil when absent), found as the
// SDK's decoder finds them: names match exactly, escapes in names decoded.
type envelope struct {
	version, id, method, params, result, error json.RawMessage
	// name is the method, decoded; "" for a message without one.
	name string
}

// maxDepth is the deepest nesting the SDK's decoder takes (its
// internal/json checkMaxDepth), counted the same way.
const maxDepth = 1000

// maxSafeID bounds an integer id: the SDK reads ids as float64, which holds
// every integer up to 2^53 exactly and changes some beyond it.
const maxSafeID = 1 << 53

// Why a message is an Invalid Request; the answer's message says it.
var (
	errNotObject = errors.New(`send one JSON-RPC 2.0 message, an object with "jsonrpc": "2.0" and a "method"`)
	errTooDeep   = fmt.Errorf("the message nests deeper than %d levels", maxDepth)
	errMalformed = errors.New("the message could not be read")
	errResponse  = errors.New("this server sends no requests, so it takes no responses: send a request or a notification")
	errNoID      = errors.New(`a request needs an "id": a message without one is a notification, and only methods starting with "notifications/" are`)
	errNotifyID  = errors.New(`a notification (a method starting with "notifications/") has no "id"`)
	errAnswerIn  = errors.New(`a request or a notification has no "result" or "error"`)
)

// notificationPrefix starts every MCP notification method. JSON-RPC calls
// a message without an id a notification; MCP names its notifications so.
const notificationPrefix = "notifications/"

// readEnvelope reads the top-level members of a JSON-RPC message and
// checks them: "jsonrpc" is "2.0"; "method" a string, without "result" or
// "error" beside it (a message without a method is a response, which this
// server never awaits); an id is one checkID accepts, present exactly
// when the method is not a notification (notificationPrefix). A member
// named twice is refused: the SDK would take the last one, and a reader
// that took the first could be told something else. What it accepts, the
// SDK decodes as a request of the same id and method (FuzzReadEnvelope).
// body must be valid JSON (json.Valid); the scan never copies it,
// whatever its size.
func readEnvelope(body []byte) (envelope, error) {
	var e envelope
	if tooDeep(body) {
		return e, errTooDeep
	}
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return e, errNotObject
	}
	i = skipSpace(body, i+1)
	if i < len(body) && body[i] == '}' {
		return e, errNotObject
	}
	for {
		if i >= len(body) || body[i] != '"' {
			return e, errMalformed
		}
		end := stringEnd(body, i)
		if end < 0 {
			return e, errMalformed
		}
		name, ok := memberName(body[i:end])
		i = skipSpace(body, end)
		if !ok || i >= len(body) || body[i] != ':' {
			return e, errMalformed
		}
		i = skipSpace(body, i+1)
		end = valueEnd(body, i)
		if end < 0 {
			return e, errMalformed
		}
		var slot *json.RawMessage
		switch name {
		case "jsonrpc":
			slot = &e.version
		case "id":
			slot = &e.id
		case "method":
			slot = &e.method
		case "params":
			slot = &e.params
		case "result":
			slot = &e.result
		case "error":
			slot = &e.error
		}
		if slot != nil {
			if *slot != nil {
				return e, fmt.Errorf("%q is given twice", name)
			}
			*slot = body[i:end:end]
		}
		i = skipSpace(body, end)
		switch {
		case i < len(body) && body[i] == ',':
			i = skipSpace(body, i+1)
			continue
		case i < len(body) && body[i] == '}' && skipSpace(body, i+1) == len(body):
			return e, e.check()
		}
		return e, errMalformed
	}
}

// check applies the rules readEnvelope documents to the members found,
// and decodes the method into e.name.
func (e *envelope) check() error {
	var version string
	if e.version == nil || json.Unmarshal(e.version, &version) != nil || version != "2.0" {
		return errNotObject
	}
	switch {
	case e.method != nil && e.method[0] != '"':
		return fmt.Errorf("\"method\" must be a string, not %s", kind(e.method))
	case e.method == nil && e.result == nil && e.error == nil:
		return errNotObject
	case e.method == nil:
		// Stateless, the server never sends a request: nothing awaits
		// an answer (the SDK takes one with a malformed "error" in plain
		// text, and any other says nothing).
		return errResponse
	case e.result != nil || e.error != nil:
		// The SDK would decode them, and answer a malformed "error" in
		// plain text.
		return errAnswerIn
	case e.id != nil:
		if err := checkID(e.id); err != nil {
			return err
		}
	}
	if json.Unmarshal(e.method, &e.name) != nil {
		return errMalformed
	}
	notification := strings.HasPrefix(e.name, notificationPrefix)
	switch {
	case e.id == nil && !notification:
		return errNoID
	case e.id != nil && notification:
		return errNotifyID
	}
	return nil
}

// checkID accepts a JSON-RPC id (raw JSON) that the SDK carries unchanged
// and echoes as the same JSON value: a string of valid UTF-8 without an
// unpaired surrogate escape (the SDK would put U+FFFD in its place), or an
// integer written without fraction, exponent or minus sign on zero, within
// ±2^53. Anything else the SDK would change (2^64 came back negative, 1.5
// as 1) or answer in plain text (1e400, an object): MCP ids are strings or
// integers, never null.
func checkID(raw []byte) error {
	if len(raw) == 0 {
		return errMalformed
	}
	switch c := raw[0]; {
	case c == '"':
		if !cleanString(raw) {
			return errors.New("a string id must be valid UTF-8 without unpaired surrogate escapes")
		}
		return nil
	case c == '-' || c >= '0' && c <= '9':
		digits := raw
		if c == '-' {
			digits = raw[1:]
		}
		plain := len(digits) > 0 && (digits[0] != '0' || len(digits) == 1) && string(raw) != "-0"
		for _, d := range digits {
			plain = plain && d >= '0' && d <= '9'
		}
		if !plain {
			return errors.New("an id must be a string or an integer; write an integer without fraction, exponent or -0")
		}
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || n > maxSafeID || n < -maxSafeID {
			return fmt.Errorf("an integer id must be within ±%d (2^53)", maxSafeID)
		}
		return nil
	}
	return fmt.Errorf("an id must be a string or an integer, not %s", kind(raw))
}

// cleanString reports whether a JSON string token (quotes included) is
// valid UTF-8 whose \u escapes pair every surrogate.
func cleanString(raw []byte) bool {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return false
	}
	s := raw[1 : len(raw)-1]
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '\\':
			if i+1 >= len(s) {
				return false
			}
			if s[i+1] != 'u' {
				i += 2
				continue
			}
			r, ok := hex4(s, i+2)
			switch {
			case !ok:
				return false
			case r >= 0xDC00 && r <= 0xDFFF: // a low surrogate first
				return false
			case r >= 0xD800 && r <= 0xDBFF:
				low, ok := hex4(s, i+8)
				if !ok || s[i+6] != '\\' || s[i+7] != 'u' || low < 0xDC00 || low > 0xDFFF {
					return false
				}
				i += 12
			default:
				i += 6
			}
		case c < ' ' || c == '"':
			return false
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				return false
			}
			i += size
		}
	}
	return true
}

// hex4 reads the four hex digits at s[i:i+4].
func hex4(s []byte, i int) (rune, bool) {
	if i < 0 || i+4 > len(s) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(s[i:i+4]), 16, 16)
	return rune(n), err == nil
}

// memberName decodes an object member's name (a string token).
func memberName(raw []byte) (string, bool) {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index after the string token starting at b[i]
// (a quote), or -1.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// valueEnd returns the index after the value starting at b[i], or -1.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end := stringEnd(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && !literalEnd(b[j]) {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// literalEnd reports whether c ends a number or a literal.
func literalEnd(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

// tooDeep reports whether b nests objects and arrays deeper than maxDepth,
// as the SDK counts.
func tooDeep(b []byte) bool {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			end := stringEnd(b, i)
			if end < 0 {
				return false
			}
			i = end - 1
		case '{', '[':
			depth++
			if depth > maxDepth {
				return true
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return false
}
