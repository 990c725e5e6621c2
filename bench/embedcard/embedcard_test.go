package embedcard

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/bench/internal/benchtest"
)

func TestEmbedCardHTML(t *testing.T) {
	embeds := []string{"http://127.0.0.2:1/embed?n=1&k=1", "http://127.0.0.3:1/embed?n=1&k=2"}
	a := HTML(1, "x", embeds)
	if a == HTML(2, "x", embeds) || a == HTML(1, "y", embeds) || a != HTML(1, "x", embeds) {
		t.Fatal("embed cards are not unique per number and nonce, or not deterministic")
	}
	if !strings.HasPrefix(a, "<!DOCTYPE html>") || !strings.Contains(a, "width:1200px;height:630px") {
		t.Fatal("the embed card is not a 1200×630 document")
	}
	if got := strings.Count(a, "<iframe "); got != 2 {
		t.Fatalf("%d iframes, want 2", got)
	}
	if !strings.Contains(a, `src="http://127.0.0.2:1/embed?n=1&amp;k=1"`) {
		t.Fatalf("iframe URLs are not escaped attributes: %s", a)
	}
	if !strings.Contains(HTML(1, "<&>", nil), "&lt;&amp;&gt;") || !strings.Contains(PostHTML(1, 1, "<&>"), "&lt;&amp;&gt;") {
		t.Fatal("the nonce is not escaped")
	}
	if p := PostHTML(1, 2, "x"); p == PostHTML(1, 3, "x") || !strings.Contains(p, "<script>") {
		t.Fatal("posts are not distinct per k, or have no script")
	}
}

// startTestSites starts the embed sites, or skips where the loopback
// addresses beyond 127.0.0.1 cannot be bound (not Linux).
func startTestSites(t *testing.T) *Sites {
	t.Helper()
	benchtest.RequireLoopbackAliases(t)
	s, err := Start(Hosts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// get fetches u and returns its body, failing the test on anything but a
// 200 no cache may keep.
func get(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("GET %s: %s, Cache-Control %q: %s", u, resp.Status, resp.Header.Get("Cache-Control"), b)
	}
	return string(b)
}

// TestEmbedSites loads an embed card as a browser would: the page, then
// each iframe from its own address.
func TestEmbedSites(t *testing.T) {
	s := startTestSites(t)
	before := s.Counts()
	page := get(t, s.CardURL("default", 7, "nonce-1"))
	srcs := regexp.MustCompile(`<iframe src="([^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(srcs) != len(Hosts)-1 {
		t.Fatalf("%d iframes, want %d: %s", len(srcs), len(Hosts)-1, page)
	}
	for i, m := range srcs {
		src := strings.ReplaceAll(m[1], "&amp;", "&")
		if want := s.base(i+1) + "/embed?"; !strings.HasPrefix(src, want) {
			t.Errorf("iframe %d is %s, want one on %s", i, src, want)
		}
		if post := get(t, src); !strings.Contains(post, fmt.Sprintf("Post %d on card 7", i+1)) || !strings.Contains(post, "nonce-1") {
			t.Errorf("iframe %d: unexpected post %s", i, post)
		}
	}
	got := s.Counts().Sub(before)
	if got["default"] != [2]int{1, len(Hosts) - 1} || len(got) != 1 {
		t.Errorf("counts = %v, want one card and %d posts for default", got, len(Hosts)-1)
	}
	if note := got.Note("default"); !strings.Contains(note, "1 card pages and 3 posts (3.00 per card, 3 expected)") {
		t.Errorf("note = %q", note)
	}
	if note := got.Note("isolated"); note != "the embed sites served no card page" {
		t.Errorf("note of a tag never served = %q", note)
	}
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/card?n=x", http.StatusBadRequest},
		{"/embed?n=1", http.StatusBadRequest},
		{"/other", http.StatusNotFound},
	} {
		resp, err := http.Get(s.base(0) + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("GET %s: %d, want %d", tc.path, resp.StatusCode, tc.want)
		}
	}
}
