package ogconfig

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/contract/ogplatform"
)

// TestNormalizePagePath: a refresh's path is a path on base_url in the OG
// GET path's one spelling; anything else is refused with a message for
// the path field.
func TestNormalizePagePath(t *testing.T) {
	for _, tc := range []struct {
		name, in, want, err string
	}{
		{name: "plain", in: "/post/1", want: "/post/1"},
		{name: "root", in: "/", want: "/"},
		{name: "empty segments and a final slash", in: "/post//1/", want: "/post/1"},
		{name: "dot segments", in: "/a/./b/../c", want: "/a/c"},
		{name: "above the root", in: "/../../a", want: "/a"},
		{name: "escaped", in: "/caf%c3%a9", want: "/caf%C3%A9"},
		{name: "not escaped", in: "/café", want: "/caf%C3%A9"},
		{name: "escaped plain character", in: "/%70ost", want: "/post"},
		{name: "escaped slash stays in its segment", in: "/a%2Fb", want: "/a%2Fb"},
		{name: "a scheme in a segment", in: "/http://x", want: "/http:/x"},
		{name: "empty", in: "", err: "starting with /"},
		{name: "relative", in: "post", err: "starting with /"},
		{name: "a URL", in: "https://example.com/post", err: "starting with /"},
		{name: "a network path", in: "//example.com/post", err: "scheme or host"},
		{name: "a query", in: "/post?x=1", err: "query"},
		{name: "a fragment", in: "/post#x", err: "fragment"},
		{name: "bad escape", in: "/%zz", err: "escapes"},
		{name: "truncated escape", in: "/a%4", err: "escapes"},
		{name: "NUL", in: "/a%00", err: "control"},
		{name: "raw control character", in: "/a\x01", err: "control"},
		{name: "too long", in: "/" + strings.Repeat("a", MaxPagePath), err: "2 KiB"},
		{name: "too long once escaped", in: "/" + strings.Repeat("é", 400), err: "2 KiB"},
		{name: "longest", in: "/" + strings.Repeat("a", MaxPagePath-1), want: "/" + strings.Repeat("a", MaxPagePath-1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NormalizePagePath(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("NormalizePagePath(%q) = %q, %v; want an error saying %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("NormalizePagePath(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

// FuzzNormalizePagePath: whatever the input, an accepted path is the GET
// path's one spelling, accepted again as it is, within the bound, without
// a query, a fragment or a host.
func FuzzNormalizePagePath(f *testing.F) {
	for _, s := range []string{"/", "/post/1", "/a//b/../c/", "/caf%c3%a9", "/café", "//host/x", "/a?b", "/a#b", "/%zz", "/a%00",
		"/%2e%2e/x", "/.%2E/", "/" + strings.Repeat("%E2%82%AC", 300), "/\u00ff\u0100", "/a%2F..%2Fb", "/ /\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := NormalizePagePath(in)
		if err != nil {
			return
		}
		if !ogplatform.IsNormalPath(got) || len(got) > MaxPagePath || strings.ContainsAny(got, "?#") || strings.HasPrefix(got, "//") {
			t.Fatalf("NormalizePagePath(%q) = %q: not a normal page path", in, got)
		}
		again, err := NormalizePagePath(got)
		if err != nil || again != got {
			t.Fatalf("NormalizePagePath(%q) = %q, then %q, %v", in, got, again, err)
		}
		if viaGET, err := ogplatform.NormalizePath(got); err != nil || viaGET != got {
			t.Fatalf("the OG GET path spells %q as %q, %v", got, viaGET, err)
		}
	})
}

// TestRequestRefresh: a refresh of every page grows the generation under
// the organization's lock (every one of concurrent refreshes counts),
// leaves the revision and updated_at, and is another organization's 404.
func TestRequestRefresh(t *testing.T) {
	clock := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	s := NewStore(openKV(t), func() time.Time { return clock })
	c, err := s.Create(context.Background(), "org-1", request("https://blog.example.com", false))
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := s.RequestRefresh(context.Background(), "org-1", c.ID); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err := s.ByDomainID(t.Context(), c.DomainID)
	if err != nil {
		t.Fatal(err)
	}
	if got.RefreshGeneration != n || !got.RefreshRequestedAt.Equal(clock) || got.Revision != c.Revision || !got.UpdatedAt.Equal(c.UpdatedAt) {
		t.Fatalf("after %d refreshes: generation %d at %v, revision %d (was %d), updated %v (was %v)", n,
			got.RefreshGeneration, got.RefreshRequestedAt, got.Revision, c.Revision, got.UpdatedAt, c.UpdatedAt)
	}
	if _, err := s.RequestRefresh(context.Background(), "org-2", c.ID); err != ErrNotFound {
		t.Fatalf("another organization's refresh: %v, want ErrNotFound", err)
	}
	// An update keeps the generation: its pages are read again anyway (a
	// new revision), and the count goes on.
	up, err := s.Update(context.Background(), "org-1", c.ID, request("https://blog.example.com", false))
	if err != nil || up.RefreshGeneration != n {
		t.Fatalf("update: generation %v, %v", up, err)
	}
}
