package resource

import (
	"unicode/utf8"

	"github.com/pictorhq/pictor/origin/contract/field"
)

// Reader reads the top-level fields of a JSON or form body; in a form an
// empty value is not sent, as imageparams reads forms. Errors go to Errs.
type Reader struct {
	O    *field.Object
	Errs *field.Errors
}

// Sent reports whether the field was sent (in a form: with a non-empty
// last value).
func (rd Reader) Sent(name string) bool {
	if rd.O.IsForm() {
		vs := rd.O.FormValues(name)
		return len(vs) > 0 && vs[len(vs)-1] != ""
	}
	return rd.O.Present(name)
}

// Str reads a string field; form text must be valid UTF-8.
func (rd Reader) Str(name string) (string, bool) {
	if !rd.Sent(name) {
		return "", false
	}
	s, ok := rd.O.String(rd.Errs, name)
	if ok && !utf8.ValidString(s) { // form text; a JSON string is always valid
		rd.Errs.Add(rd.O.Path(name), "must be valid UTF-8 text")
		return "", false
	}
	return s, ok
}

// Bool reads a boolean field.
func (rd Reader) Bool(name string) (bool, bool) {
	if !rd.Sent(name) {
		return false, false
	}
	return rd.O.Bool(rd.Errs, name)
}
