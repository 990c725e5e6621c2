package hbs

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestFormatNumber(t *testing.T) {
	tests := []struct {
		name string
		f    float64
		want string
	}{
		{"zero", 0, "0"},
		{"negative zero", math.Copysign(0, -1), "0"},
		{"integer", 42, "42"},
		{"negative", -7, "-7"},
		{"fraction", 0.1, "0.1"},
		{"not 0.3", 0.30000000000000004, "0.30000000000000004"},
		{"large integer", 123456789012345680000, "123456789012345680000"},
		{"1e21", 1e21, "1e+21"},
		{"1.5e21", 1.5e21, "1.5e+21"},
		{"small", 0.000001, "0.000001"},
		{"smaller", 1e-7, "1e-7"},
		{"negative small", -3.25e-10, "-3.25e-10"},
		{"max", math.MaxFloat64, "1.7976931348623157e+308"},
		{"min", 5e-324, "5e-324"},
		{"infinity", math.Inf(1), "Infinity"},
		{"minus infinity", math.Inf(-1), "-Infinity"},
		{"nan", math.NaN(), "NaN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := formatNumber(tt.f); got != tt.want {
				t.Fatalf("formatNumber(%v) = %q, want %q", tt.f, got, tt.want)
			}
		})
	}
}

func TestLooseEqual(t *testing.T) {
	arr := Value{kind: Array, arr: &array{elems: []Value{numberValue(5)}}}
	tests := []struct {
		name string
		a, b Value
		want bool
	}{
		{"number string", numberValue(1), stringValue("1"), true},
		{"number string hex", numberValue(16), stringValue("0x10"), true},
		{"null undefined", null, undefined, true},
		{"null zero", null, numberValue(0), false},
		{"bool number", trueValue, numberValue(1), true},
		{"array number", arr, numberValue(5), true},
		{"array itself", arr, arr, true},
		{"object string", nullCtx, stringValue("[object Object]"), true},
		{"nan", numberValue(math.NaN()), numberValue(math.NaN()), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := looseEqual(tt.a, tt.b); got != tt.want {
				t.Fatalf("looseEqual = %v, want %v", got, tt.want)
			}
		})
	}
}

// FuzzParse: any template parses or fails with a *SyntaxError or
// ErrTooDeep, and renders without panicking.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"{{a}}", "{{#each a}}{{@index}}{{else}}x{{/each}}", "{{~#if a~}}\n{{/if}}", "{{!-- c --}}", "{{{{raw}}}}{{x}}{{{{/raw}}}}", "{{lookup a (lookup b 1)}}", "{{#if a}}", "\\{{x}}"} {
		f.Add(s)
	}
	values, _ := ParseValues([]byte(`{"a":[1,{"b":2}],"b":"x"}`), 64)
	f.Fuzz(func(t *testing.T, src string) {
		tpl, err := Parse(src, 64)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) && !errors.Is(err, ErrTooDeep) {
				t.Fatalf("Parse(%q) = %v", src, err)
			}
			if se != nil && (se.Line < 1 || se.Column < 1) {
				t.Fatalf("Parse(%q): no position: %+v", src, se)
			}
			return
		}
		_, err = tpl.Render(values, 1<<16)
		var re *RenderError
		if err != nil && !errors.As(err, &re) && !errors.Is(err, ErrOutputTooLarge) {
			t.Fatalf("Render(%q) = %v", src, err)
		}
	})
}

// FuzzParseValues: any input is a value, ErrValues or ErrTooDeep.
func FuzzParseValues(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,2.5e3,-0,true,null,"\u00e9\ud83d\ude00"]}`, `{"a":{"b":{"c":[]}}}`, `[`, `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ParseValues(data, 16)
		if err != nil {
			if !errors.Is(err, ErrValues) && !errors.Is(err, ErrTooDeep) {
				t.Fatalf("ParseValues(%q) = %v", data, err)
			}
			return
		}
		if v.Kind() != Object {
			t.Fatalf("ParseValues(%q) is a %v, not an object", data, v.Kind())
		}
		_ = v.toString()
	})
}

// programTemplates are templates for the program round trip tests.
var programTemplates = []string{
	"", "plain", "{{a}}", "{{{a}}}{{&b}}", "{{#each a as |x i|}}{{x}}{{i}}{{@index}}{{../b}}{{else}}none{{/each}}",
	"{{#if a}}x{{else if b}}y{{else}}z{{/if}}", "{{lookup a (lookup b 1) k=\"v\" n=1.5 t=true u=null}}",
	"{{! c }}{{!-- d --}}", "{{> p x=1}}{{> (name) a}}", "{{{{raw}}}}{{x}}{{{{/raw}}}}", "  {{~#with a~}}\n  {{b.[c d]}}\n{{~/with}}",
	"{{@root.a}}{{this.b}}{{./c}}{{^a}}inv{{/a}}", "{{\"str\" 1 false}}{{123}}",
}

// TestProgramRoundTrip: a decoded program renders as the parsed
// template, and encodes to the same bytes.
func TestProgramRoundTrip(t *testing.T) {
	values, err := ParseValues([]byte(`{"a":[1,{"b":2}],"b":"x<y","c":{"d":true}}`), 64)
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range programTemplates {
		t.Run(src, func(t *testing.T) {
			tpl, err := Parse(src, 64)
			if err != nil {
				t.Fatal(err)
			}
			enc := tpl.Encode(nil)
			dec, err := DecodeProgram(enc, 64)
			if err != nil {
				t.Fatalf("DecodeProgram: %v", err)
			}
			if again := dec.Encode(nil); string(again) != string(enc) {
				t.Fatalf("re-encoded program differs:\n%q\n%q", enc, again)
			}
			want, werr := tpl.Render(values, 1<<20)
			got, gerr := dec.Render(values, 1<<20)
			if got != want || fmt.Sprint(gerr) != fmt.Sprint(werr) {
				t.Fatalf("decoded program renders %q, %v; parsed %q, %v", got, gerr, want, werr)
			}
			// Every truncation is rejected.
			for i := range enc {
				if _, err := DecodeProgram(enc[:i], 64); !errors.Is(err, ErrProgram) {
					t.Fatalf("DecodeProgram of %d of %d bytes = %v, want ErrProgram", i, len(enc), err)
				}
			}
		})
	}
}

// TestProgramDepth: a program nested deeper than the limit is rejected.
func TestProgramDepth(t *testing.T) {
	src := strings.Repeat("{{#if a}}", 10) + strings.Repeat("{{/if}}", 10)
	tpl, err := Parse(src, 64)
	if err != nil {
		t.Fatal(err)
	}
	enc := tpl.Encode(nil)
	if _, err := DecodeProgram(enc, 10); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	if _, err := DecodeProgram(enc, 8); !errors.Is(err, ErrProgram) {
		t.Fatalf("past the limit: %v, want ErrProgram", err)
	}
}

// FuzzDecodeProgram: any bytes decode to a program that renders, or
// fail with ErrProgram; never a panic.
func FuzzDecodeProgram(f *testing.F) {
	for _, src := range programTemplates {
		tpl, err := Parse(src, 64)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(tpl.Encode(nil))
	}
	values, _ := ParseValues([]byte(`{"a":[1,{"b":2}],"b":"x"}`), 64)
	f.Fuzz(func(t *testing.T, b []byte) {
		tpl, err := DecodeProgram(b, 16)
		if err != nil {
			if !errors.Is(err, ErrProgram) {
				t.Fatalf("DecodeProgram = %v", err)
			}
			return
		}
		_, err = tpl.Render(values, 1<<16)
		var re *RenderError
		if err != nil && !errors.As(err, &re) && !errors.Is(err, ErrOutputTooLarge) {
			t.Fatalf("Render = %v", err)
		}
	})
}

// TestValuesBinary: values through EncodeValues and DecodeValues render
// as the JSON ones.
func TestValuesBinary(t *testing.T) {
	tpl, err := Parse(`{{#each this}}{{@key}}={{this}};{{/each}}{{b}}{{{b}}}{{a.length}}{{c.[1]}}`, 64)
	if err != nil {
		t.Fatal(err)
	}
	for _, js := range []string{`{}`, `{"a":[1,2.5,-0,true,null,"é"],"b":"<&>\"'=` + "`" + `","c":{"2":"x","1":"y","z":{}},"a":[3]}`,
		`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13}`} {
		v, err := ParseValues([]byte(js), 64)
		if err != nil {
			t.Fatal(err)
		}
		enc := EncodeValues(nil, v)
		dv, err := DecodeValues(enc, 64)
		if err != nil {
			t.Fatalf("DecodeValues(%s): %v", js, err)
		}
		want, _ := tpl.Render(v, 1<<20)
		got, _ := tpl.Render(dv, 1<<20)
		if got != want {
			t.Fatalf("%s: binary values render %q, JSON %q", js, got, want)
		}
		for i := range enc {
			if _, err := DecodeValues(enc[:i], 64); !errors.Is(err, ErrValues) {
				t.Fatalf("DecodeValues of %d of %d bytes = %v, want ErrValues", i, len(enc), err)
			}
		}
	}
}

// FuzzDecodeValues: any bytes are values, ErrValues or ErrTooDeep.
func FuzzDecodeValues(f *testing.F) {
	v, _ := ParseValues([]byte(`{"a":[1,{"b":2}],"b":"x<"}`), 64)
	f.Add(EncodeValues(nil, v))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := DecodeValues(b, 16)
		if err != nil {
			if !errors.Is(err, ErrValues) && !errors.Is(err, ErrTooDeep) {
				t.Fatalf("DecodeValues = %v", err)
			}
			return
		}
		_ = v.toString()
	})
}
