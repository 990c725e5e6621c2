package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"go.yaml.in/yaml/v4"
)

// JSON encodes the document deterministically: object keys sorted, two
// spaces of indentation, no HTML escaping, a final newline.
func JSON(doc *openapi3.T) ([]byte, error) {
	v, err := canonical(doc)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode the document: %w", err)
	}
	return buf.Bytes(), nil
}

// YAML encodes the same document as YAML, keys sorted as in JSON.
func YAML(doc *openapi3.T) ([]byte, error) {
	v, err := canonical(doc)
	if err != nil {
		return nil, err
	}
	node, err := yamlNode(v)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(node); err != nil {
		return nil, fmt.Errorf("encode the document as YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode the document as YAML: %w", err)
	}
	return buf.Bytes(), nil
}

// canonical is the document as plain JSON values, numbers kept as written.
func canonical(doc *openapi3.T) (any, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("marshal the document: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("read the document back: %w", err)
	}
	return v, nil
}

// yamlNode builds the YAML of a JSON value: maps with sorted keys, strings
// always as strings, numbers as written.
func yamlNode(v any) (*yaml.Node, error) {
	switch v := v.(type) {
	case map[string]any:
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			val, err := yamlNode(v[k])
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, yamlString(k), val)
		}
		return n, nil
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, e := range v {
			val, err := yamlNode(e)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, val)
		}
		return n, nil
	case string:
		return yamlString(v), nil
	case json.Number:
		tag := "!!int"
		if strings.ContainsAny(v.String(), ".eE") {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v.String()}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(v)}, nil
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	}
	return nil, fmt.Errorf("encode the document as YAML: unexpected %T", v)
}

func yamlString(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	switch {
	case strings.Contains(s, "\n"):
		n.Style = yaml.LiteralStyle
	case yaml11Retypes(s):
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

// yaml11Implicit matches the plain scalars a YAML 1.1 parser reads as
// something other than a string (https://yaml.org/type/: bool, null, int,
// float, timestamp, merge, value), and YAML 1.2's numbers. The encoder
// quotes only what YAML 1.2 would retype, so `on`, `off`, `yes`, `0777` or
// `1:20` went out plain, and YAML 1.1 parsers (PyYAML, go-yaml v2, many
// gateways) read a boolean or a number where the document says a string.
var yaml11Implicit = regexp.MustCompile(`^(?:` +
	`y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF` +
	`|~|null|Null|NULL` +
	`|[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+` +
	`|[-+]?(?:[0-9][0-9_]*)?\.[0-9.]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*` +
	`|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)` +
	`|[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?` +
	`|[0-9]{4}-[0-9]{2}-[0-9]{2}` +
	`|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?(?:[ \t]*Z|[-+][0-9]{1,2}(?::[0-9]{2})?)?` +
	`|<<|=` +
	`)$`)

// yaml11Retypes reports whether a plain s would not be read back as the
// string s by a YAML 1.1 parser.
func yaml11Retypes(s string) bool { return s == "" || yaml11Implicit.MatchString(s) }
