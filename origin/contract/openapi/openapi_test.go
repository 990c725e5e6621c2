package openapi

import (
	"bytes"
	"encoding/json"
	"regexp"
	"testing"
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
