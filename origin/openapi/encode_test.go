package openapi

import (
	"testing"

	yaml11 "go.yaml.in/yaml/v2"
	"go.yaml.in/yaml/v4"
)

// TestYAMLStringsStayStrings: every string a YAML 1.1 parser would retype
// if written plain is written so that it reads back as that string, and
// strings no parser retypes stay plain (unquoted) in the document.
func TestYAMLStringsStayStrings(t *testing.T) {
	retyped := []string{
		"", "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True", "TRUE", "false", "False", "FALSE",
		"on", "On", "ON", "off", "Off", "OFF", "~", "null", "Null", "NULL",
		"0", "7", "-7", "+7", "0777", "0b101", "0x1F", "1_000", "190:20:30", "1.5", ".5", "-.5", "1.2.3", "1e3", "1.0e+3",
		"6.8523015e+5", "190:20:30.15", ".inf", "-.Inf", "+.INF", ".nan", ".NaN",
		"2001-12-14", "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10 -5", "2001-12-15T02:59:43.1Z", "<<", "=",
	}
	plain := []string{"png", "webp", "auto", "1.5x", "on-demand", "offset", "yes please", "v1", "a:b", "0x", "--", "2001-12"}
	for _, s := range append(append([]string{}, retyped...), plain...) {
		out, err := yaml.Marshal(yamlOf(t, s))
		if err != nil {
			t.Fatal(err)
		}
		var back map[string]any
		if err := yaml11.Unmarshal(out, &back); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if got, ok := back["v"].(string); !ok || got != s {
			t.Errorf("%q written as %q is read by YAML 1.1 as %T %v", s, out, back["v"], back["v"])
		}
	}
	for _, s := range plain {
		if out, _ := yaml.Marshal(yamlOf(t, s)); string(out) != "v: "+s+"\n" {
			t.Errorf("%q written as %q, want it plain", s, out)
		}
	}
}

func yamlOf(t *testing.T, s string) *yaml.Node {
	t.Helper()
	n, err := yamlNode(map[string]any{"v": s})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
