package hbs

import (
	"errors"
	"math"
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
