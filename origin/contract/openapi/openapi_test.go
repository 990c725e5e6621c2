package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"

	"github.com/pictorhq/pictor/origin/contract/precompress"
)

func TestDocument(t *testing.T) {
	var doc struct {
		OpenAPI string `json:"openapi"`
		Info    struct {
			Title   string `json:"title"`
			Version string `json:"version"`
		} `json:"info"`
		Paths map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(JSON(), &doc); err != nil {
		t.Fatalf("JSON() is not JSON: %v", err)
	}
	if doc.OpenAPI != "3.1.0" || doc.Info.Title != "Pictor API" || doc.Info.Version != "1.0.0" || len(doc.Paths) == 0 {
		t.Errorf("document = %+v, want OpenAPI 3.1.0, Pictor API 1.0.0 with paths", doc)
	}
	if len(YAML()) == 0 || bytes.HasPrefix(YAML(), []byte("{")) {
		t.Errorf("YAML() = %.40q, want a YAML document", YAML())
	}
}

func TestETags(t *testing.T) {
	strong := regexp.MustCompile(`^"[0-9a-f]{32}"$`)
	for _, tag := range []string{JSONETag(), YAMLETag()} {
		if !strong.MatchString(tag) {
			t.Errorf("ETag %s is not a strong quoted hash", tag)
		}
	}
	if JSONETag() == YAMLETag() {
		t.Error("the JSON and YAML ETags are equal")
	}
	a, again := etag([]byte("a")), etag([]byte{'a'})
	if a == etag([]byte("b")) || a != again {
		t.Error("etag is not a hash of the bytes")
	}
	if JSONETag() != etag(JSON()) || YAMLETag() != etag(YAML()) {
		t.Error("the ETags are not those of the documents")
	}
}

// TestYAMLReadsAsTheJSONUnderYAML11: a YAML 1.1 parser (go-yaml v2, as
// PyYAML and many gateways) reads the served YAML as the same document as
// the JSON: every string stays a string (`on`, `off`, `yes`, `0777` are not
// booleans or numbers), every number the same number.
func TestYAMLReadsAsTheJSONUnderYAML11(t *testing.T) {
	var fromJSON any
	dec := json.NewDecoder(bytes.NewReader(JSON()))
	dec.UseNumber()
	if err := dec.Decode(&fromJSON); err != nil {
		t.Fatal(err)
	}
	var fromYAML any
	if err := yaml.Unmarshal(YAML(), &fromYAML); err != nil {
		t.Fatalf("a YAML 1.1 parser cannot read the document: %v", err)
	}
	var diffs []string
	sameValue(&diffs, "", fromJSON, fromYAML)
	if len(diffs) > 0 {
		t.Fatalf("%d values read differently by a YAML 1.1 parser, e.g.:\n%s", len(diffs), strings.Join(diffs[:min(len(diffs), 20)], "\n"))
	}
}

// sameValue compares a JSON value with what go-yaml v2 made of its YAML.
func sameValue(diffs *[]string, path string, j, y any) {
	switch j := j.(type) {
	case map[string]any:
		m, ok := y.(map[any]any)
		if !ok || len(m) != len(j) {
			*diffs = append(*diffs, fmt.Sprintf("%s: object read as %T with %d entries", path, y, len(m)))
			return
		}
		for k, v := range j {
			yv, ok := m[k]
			if !ok {
				*diffs = append(*diffs, fmt.Sprintf("%s/%s: key not read back as that string", path, k))
				continue
			}
			sameValue(diffs, path+"/"+k, v, yv)
		}
	case []any:
		s, ok := y.([]any)
		if !ok || len(s) != len(j) {
			*diffs = append(*diffs, fmt.Sprintf("%s: array read as %T", path, y))
			return
		}
		for i := range j {
			sameValue(diffs, fmt.Sprintf("%s/%d", path, i), j[i], s[i])
		}
	case json.Number:
		want, _ := j.Float64()
		var got float64
		switch y := y.(type) {
		case int:
			got = float64(y)
		case float64:
			got = y
		default:
			*diffs = append(*diffs, fmt.Sprintf("%s: number %s read as %T %v", path, j, y, y))
			return
		}
		if got != want {
			*diffs = append(*diffs, fmt.Sprintf("%s: number %s read as %v", path, j, got))
		}
	default: // string, bool, nil
		if j != y {
			*diffs = append(*diffs, fmt.Sprintf("%s: %T %q read as %T %v", path, j, j, y, y))
		}
	}
}

// TestPrecompressed: the committed .br and .gz forms are the documents'.
// After a change of the document (PICTOR_UPDATE_OPENAPI=1 in ./origin
// rewrites them with it), PICTOR_UPDATE_PRECOMPRESSED=1 rewrites them alone.
func TestPrecompressed(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  []byte
		c    Compressed
	}{
		{"openapi.json", JSON(), JSONCompressed()},
		{"openapi.yaml", YAML(), YAMLCompressed()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if os.Getenv("PICTOR_UPDATE_PRECOMPRESSED") != "" {
				if err := precompress.Write(tc.name); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err := precompress.Check(tc.src, tc.c.Brotli, tc.c.Gzip); err != nil {
				t.Fatalf("%v: rerun with PICTOR_UPDATE_PRECOMPRESSED=1 go test ./origin/contract/openapi -run TestPrecompressed", err)
			}
		})
	}
}
