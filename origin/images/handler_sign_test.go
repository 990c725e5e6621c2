package images

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/field"
)

// FuzzSignedTemplateQuery: for any JSON object of template values (and a
// version), the query POST /v1/template/{id}/signed-url signs is read
// back by the signed URL as the same values and version: a string that
// looks like JSON ("12", "true", "null") stays a string.
func FuzzSignedTemplateQuery(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"title":"Hello"}`, `{"n":"12","t":"true","z":"null","e":""}`,
		`{"n":12,"b":false,"o":{"a":[1,"x"]},"nil":null}`, `{"a b&c=d":"x+y%20z;"}`,
		`{"s":" 12 ","q":"\"quoted\"","u":"caf\u00e9 \u2603"}`, `{"":"empty name"}`,
	} {
		f.Add(seed, 0)
		f.Add(seed, 3)
	}
	f.Fuzz(func(t *testing.T, input string, version int) {
		var values map[string]json.RawMessage
		if json.Unmarshal([]byte(input), &values) != nil || values == nil || version < 0 {
			return
		}
		if _, reserved := values["template_version"]; reserved {
			if _, err := SignedTemplateQuery(values, version); err == nil {
				t.Fatal("a value named template_version was signed")
			}
			return
		}
		query, err := SignedTemplateQuery(values, version)
		if err != nil {
			if len(values) > field.MaxFormFields {
				return
			}
			t.Fatalf("SignedTemplateQuery(%s): %v", input, err)
		}
		parsed, err := field.ParseQuery(query)
		if err != nil {
			t.Fatalf("the query %q does not parse: %v", query, err)
		}
		got, gotVersion, err := templateQuery(parsed)
		if err != nil || gotVersion != version {
			t.Fatalf("read back: version %d, %v; want %d", gotVersion, err, version)
		}
		if len(got) != len(values) {
			t.Fatalf("read back %d values, sent %d (query %q)", len(got), len(values), query)
		}
		for k, raw := range values {
			var want, have any
			json.Unmarshal(raw, &want)
			if err := json.Unmarshal(got[k], &have); err != nil || !reflect.DeepEqual(want, have) {
				t.Fatalf("%q: sent %s, read back %s (query %q)", k, raw, got[k], query)
			}
		}
	})
}
