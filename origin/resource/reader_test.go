package resource_test

import (
	"encoding/json"
	"net/url"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/resource"
)

// TestReader: what counts as sent in JSON and in a form (an empty form
// value is not), strings (form text must be UTF-8) and booleans, with the
// error naming the field.
func TestReader(t *testing.T) {
	fromJSON := func(doc string) *field.Object {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		return field.FromJSON(m)
	}
	for _, tc := range []struct {
		name      string
		o         *field.Object
		sent      bool
		str       string
		strOK     bool
		boolean   bool
		boolOK    bool
		errFields int
	}{
		{"json string", fromJSON(`{"f":"x"}`), true, "x", true, false, false, 1},
		{"json empty string", fromJSON(`{"f":""}`), true, "", true, false, false, 1},
		{"json true", fromJSON(`{"f":true}`), true, "", false, true, true, 1},
		{"json null", fromJSON(`{"f":null}`), false, "", false, false, false, 0},
		{"json absent", fromJSON(`{"g":1}`), false, "", false, false, false, 0},
		{"form value", field.FromForm(url.Values{"f": {"x"}}), true, "x", true, false, false, 1},
		{"form true", field.FromForm(url.Values{"f": {"true"}}), true, "true", true, true, true, 0},
		{"form last value", field.FromForm(url.Values{"f": {"a", "b"}}), true, "b", true, false, false, 1},
		{"form empty", field.FromForm(url.Values{"f": {""}}), false, "", false, false, false, 0},
		{"form last empty", field.FromForm(url.Values{"f": {"a", ""}}), false, "", false, false, false, 0},
		{"form bad utf-8", field.FromForm(url.Values{"f": {"\xff"}}), true, "", false, false, false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var errs field.Errors
			rd := resource.Reader{O: tc.o, Errs: &errs}
			if got := rd.Sent("f"); got != tc.sent {
				t.Errorf("Sent = %v", got)
			}
			if s, ok := rd.Str("f"); s != tc.str || ok != tc.strOK {
				t.Errorf("Str = %q, %v", s, ok)
			}
			if b, ok := rd.Bool("f"); b != tc.boolean || ok != tc.boolOK {
				t.Errorf("Bool = %v, %v", b, ok)
			}
			list := errs.List()
			if len(list) != tc.errFields {
				t.Fatalf("errors %+v, want %d", list, tc.errFields)
			}
			for _, e := range list {
				if e.Path != "f" || e.Message == "" {
					t.Errorf("error %+v does not name f", e)
				}
			}
		})
	}
}
