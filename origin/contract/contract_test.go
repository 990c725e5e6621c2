package contract

import (
	"strings"
	"testing"
)

func TestValidRequestID(t *testing.T) {
	for _, tc := range []struct {
		name string
		id   string
		want bool
	}{
		{"empty", "", false},
		{"short", "abc-123", true},
		{"longest", strings.Repeat("a", MaxRequestID), true},
		{"too long", strings.Repeat("a", MaxRequestID+1), false},
		{"space", "a b", false},
		{"newline", "a\nb", false},
		{"delete", "a\x7f", false},
		{"non-ascii", "é", false},
		{"punctuation", "!~{}", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ValidRequestID(tc.id); got != tc.want {
				t.Fatalf("ValidRequestID(%q) = %v, want %v", tc.id, got, tc.want)
			}
			if got := ValidRequestID([]byte(tc.id)); got != tc.want {
				t.Fatalf("ValidRequestID([]byte(%q)) = %v, want %v", tc.id, got, tc.want)
			}
		})
	}
}

func TestTags(t *testing.T) {
	if got := JoinTags(TemplateTag("t1"), KeyTag("k1")); got != "tpl:t1 k1" {
		t.Fatalf("JoinTags = %q", got)
	}
	// A tag never contains the separator, whatever the id.
	for _, tag := range []string{TemplateTag("abc"), KeyTag("def"), OGConfigTag("ghi")} {
		if strings.ContainsAny(tag, " \t") {
			t.Fatalf("tag %q contains a separator", tag)
		}
	}
}
