package lexer

import (
	"math/rand/v2"
	"testing"
)

// TestFastMatch: the hand-written matchers, and findRegexp's shortcuts,
// give the regexps' matches:
// every string of up to 3 bytes over the bytes that matter to them,
// their literals followed by any 2 of those bytes, and random strings.
func TestFastMatch(t *testing.T) {
	alphabet := "{}~&#/>^!.=)|aterufls x\t\n-\r[@"
	strs := []string{""}
	for n, prev := 0, []string{""}; n < 3; n++ {
		var next []string
		for _, p := range prev {
			for i := range len(alphabet) {
				next = append(next, p+alphabet[i:i+1])
			}
		}
		strs, prev = append(strs, next...), next
	}
	for _, lit := range []string{"{{", "{{~", "{{{{", "}}}}", "}~", "}}", "true", "false", "."} {
		for i := range len(alphabet) {
			for j := range len(alphabet) {
				strs = append(strs, lit+alphabet[i:i+1]+alphabet[j:j+1])
			}
		}
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 50000 {
		b := make([]byte, rnd.IntN(8))
		for i := range b {
			b[i] = alphabet[rnd.IntN(len(alphabet))]
		}
		strs = append(strs, string(b))
	}
	for r, m := range fastMatch {
		for _, s := range strs {
			if want, got := r.FindString(s), m(s); got != want {
				t.Fatalf("%s on %q: fast %q, regexp %q", r, s, got, want)
			}
		}
	}
	// firstBytes and afterOpen, in findRegexp (a hand-written matcher
	// gives the regexp's match, checked above)
	for r, a := range accel {
		for _, s := range strs {
			want := a.match
			if want == nil {
				want = r.FindString
			}
			l := &Lexer{input: s}
			if want, got := want(s), l.findRegexp(r); got != want {
				t.Fatalf("%s on %q: findRegexp %q, regexp %q", r, s, got, want)
			}
		}
	}
	// rID, in findRegexp
	ids := append(strs, "héllo wörld", "a\xffb c", "日本語}}", "x\r\fy\tz")
	for _, s := range ids {
		l := &Lexer{input: s}
		if want, got := rID.FindString(s), l.findRegexp(rID); got != want {
			t.Fatalf("%s on %q: findRegexp %q, regexp %q", rID, s, got, want)
		}
	}
}
