package ogconfig

import (
	"strings"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/ogplatform"
)

func TestPreviewPath(t *testing.T) {
	for _, tc := range []struct {
		name, in, want, err string
	}{
		{"home", "/", "/", ""},
		{"page", "/blog/post-1", "/blog/post-1", ""},
		{"escaped", "/caf%c3%a9", "/caf%C3%A9", ""},
		{"unescaped", "/café", "/caf%C3%A9", ""},
		{"trailing slash", "/blog/", "/blog", ""},
		{"empty", "", "", "is required"},
		{"url", "https://www.example.com/a", "", "not a URL"},
		{"scheme-relative", "//www.example.com/a", "", "without a scheme or host"},
		{"relative", "a/b", "", "starting with /"},
		{"parent", "/a/../b", "", ". or .. segments"},
		{"parent escaped", "/a/%2E%2e/b", "", ". or .. segments"},
		{"dot", "/a/./b", "", ". or .. segments"},
		{"query", "/a?b", "", "without a query"},
		{"fragment", "/a#b", "", "without a query or fragment"},
		{"control", "/a%0Ab", "", "not a valid page path"},
		{"too long once encoded", "/" + strings.Repeat("é", 600), "", "longer than 2 KiB"},
		{"too long", "/" + strings.Repeat("a", 2048), "", "at most 2 KiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PreviewPath(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("PreviewPath(%q) = %q, %v; want an error saying %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("PreviewPath(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

// FuzzPreviewPath: whatever a person types, an accepted path is in its
// one spelling, a path a crawler can ask for, and accepted again as it is.
func FuzzPreviewPath(f *testing.F) {
	for _, s := range []string{"/", "/blog/post-1", "/a/../b", "/%2e%2e", "https://x/y", "/caf%C3%A9", "/a%00", "//x", "/a?b#c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := PreviewPath(in)
		if err != nil {
			return
		}
		if !ogplatform.IsNormalPath(got) || len(got) > MaxPagePath {
			t.Fatalf("PreviewPath(%q) = %q, not a normal path", in, got)
		}
		if again, err := PreviewPath(got); err != nil || again != got {
			t.Fatalf("PreviewPath(%q) = %q, then %q, %v", in, got, again, err)
		}
	})
}
