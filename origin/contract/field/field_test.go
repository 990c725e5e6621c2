package field

import (
	"net/url"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apierr"
)

func TestScalarsJSONAndForm(t *testing.T) {
	strict, err := ParseJSON([]byte(`{"n":5,"s":"5","f":1.5,"b":true,"bs":"true","arr":["a","b"],"nul":null}`))
	if err != nil {
		t.Fatal(err)
	}
	lenient, _ := ParseJSON([]byte(`{"n":"5","b":"1","f":" 2.5 "}`))
	lenient.Lenient = true
	form := FromForm(url.Values{"n": {"7"}, "b": {"false"}, "arr": {"x", "y"}, "json": {`["p","q"]`}, "inf": {"Inf"}})
	huge, _ := ParseJSON([]byte(`{"big":1e309,"neg":-1e309,"tiny":1e-400}`))
	// rangeError checks that a field was refused for its range, not as a non-number.
	rangeError := func(e *Errors) bool {
		l := e.List()
		return len(l) == 1 && strings.HasPrefix(l[0].Message, "must be between")
	}

	tests := []struct {
		name  string
		check func(*Errors) bool
		bad   bool
	}{
		{"int", func(e *Errors) bool { v, ok := strict.Int(e, "n", 0, 10); return ok && v == 5 }, false},
		{"int out of range", func(e *Errors) bool { _, ok := strict.Int(e, "n", 6, 10); return !ok }, true},
		{"int not integral", func(e *Errors) bool { _, ok := strict.Int(e, "f", 0, 10); return !ok }, true},
		{"strict rejects quoted number", func(e *Errors) bool { _, ok := strict.Int(e, "s", 0, 10); return !ok }, true},
		{"strict rejects quoted bool", func(e *Errors) bool { _, ok := strict.Bool(e, "bs"); return !ok }, true},
		{"bool", func(e *Errors) bool { v, ok := strict.Bool(e, "b"); return ok && v }, false},
		{"string of a number", func(e *Errors) bool { _, ok := strict.String(e, "n"); return !ok }, true},
		{"null is absent", func(e *Errors) bool { _, ok := strict.String(e, "nul"); return !ok && !strict.Present("nul") }, false},
		{"array", func(e *Errors) bool { v, ok := strict.StringArray(e, "arr"); return ok && len(v) == 2 }, false},
		{"lenient int", func(e *Errors) bool { v, ok := lenient.Int(e, "n", 0, 10); return ok && v == 5 }, false},
		{"lenient bool", func(e *Errors) bool { v, ok := lenient.Bool(e, "b"); return ok && v }, false},
		{"lenient float", func(e *Errors) bool { v, ok := lenient.Float(e, "f", 0, 3); return ok && v == 2.5 }, false},
		{"form int", func(e *Errors) bool { v, ok := form.Int(e, "n", 0, 10); return ok && v == 7 }, false},
		{"form bool", func(e *Errors) bool { v, ok := form.Bool(e, "b"); return ok && !v }, false},
		{"form repeated", func(e *Errors) bool { v, ok := form.StringArray(e, "arr"); return ok && len(v) == 2 }, false},
		{"form JSON array", func(e *Errors) bool { v, ok := form.StringArray(e, "json"); return ok && v[1] == "q" }, false},
		{"form Inf is not a number", func(e *Errors) bool { _, ok := form.Float(e, "inf", 0, 3); return !ok && !rangeError(e) }, true},
		{"number past float64, int", func(e *Errors) bool { _, ok := huge.Int(e, "big", 1, 16384); return !ok && rangeError(e) }, true},
		{"number past float64, float", func(e *Errors) bool { _, ok := huge.Float(e, "neg", 0.1, 3); return !ok && rangeError(e) }, true},
		{"number below float64", func(e *Errors) bool { v, ok := huge.Float(e, "tiny", 0, 3); return ok && v == 0 }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var errs Errors
			if !tc.check(&errs) {
				t.Fatal("unexpected value")
			}
			if errs.Any() != tc.bad {
				t.Fatalf("errors = %v, want bad=%v", errs.List(), tc.bad)
			}
		})
	}
}

func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `[]`, `{"a":`, ` {"a":[1,{"b":null}]} `, "{\"a\":\"\\ud800\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		o, err := ParseJSON(body)
		if err != nil {
			if e, ok := err.(*apierr.Error); !ok || e.Status != 400 {
				t.Fatalf("error %v is not a 400", err)
			}
			return
		}
		var errs Errors
		for _, k := range o.Keys() {
			o.String(&errs, k)
			o.Int(&errs, k, 0, 100)
			o.Bool(&errs, k)
			o.StringArray(&errs, k)
		}
	})
}
