package cursor

import (
	"errors"
	"testing"
)

func TestRoundTripAndTamper(t *testing.T) {
	c := New([]byte("0123456789abcdef0123456789abcdef"))
	tok := c.Encode("org-a/keys", "0190aaaa-0000-7000-8000-000000000001")
	got, err := c.Decode("org-a/keys", tok)
	if err != nil || got != "0190aaaa-0000-7000-8000-000000000001" {
		t.Fatalf("decode = %q, %v", got, err)
	}
	flipped := []byte(tok)
	flipped[3] ^= 1
	tests := []struct {
		name, scope, token string
	}{
		{name: "other scope", scope: "org-b/keys", token: tok},
		{name: "flipped byte", scope: "org-a/keys", token: string(flipped)},
		{name: "truncated", scope: "org-a/keys", token: tok[:len(tok)-2]},
		{name: "empty", scope: "org-a/keys", token: ""},
		{name: "not base64", scope: "org-a/keys", token: "!!!"},
		{name: "other key", scope: "org-a/keys", token: New([]byte("another key another key another k")).Encode("org-a/keys", "x")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := c.Decode(tc.scope, tc.token); !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	c := New([]byte("0123456789abcdef0123456789abcdef"))
	f.Add(c.Encode("s", "pos"))
	f.Add("")
	f.Add("AAAA")
	f.Fuzz(func(t *testing.T, token string) {
		pos, err := c.Decode("s", token)
		if err != nil {
			return
		}
		// Any accepted token must be exactly what Encode produces.
		if c.Encode("s", pos) != token {
			t.Fatalf("accepted a token Encode would not produce: %q", token)
		}
	})
}
