package cursor

import (
	"errors"
	"testing"
)

// TestPreviousKeysDecode: a codec signing with a new key decodes the
// tokens of the previous one, and its own; a codec of the new key alone
// refuses the old tokens; new tokens are the new key's.
func TestPreviousKeysDecode(t *testing.T) {
	oldKey, newKey := []byte("old key old key old key old key!"), []byte("new key new key new key new key!")
	old := New(oldKey)
	rotated := New(newKey, oldKey)
	newOnly := New(newKey)
	tok := old.Encode("org-a/keys", "pos-1")
	tests := []struct {
		name  string
		codec Codec
		token string
		ok    bool
	}{
		{name: "old token, rotated codec", codec: rotated, token: tok, ok: true},
		{name: "new token, rotated codec", codec: rotated, token: rotated.Encode("org-a/keys", "pos-1"), ok: true},
		{name: "new token, new key alone", codec: newOnly, token: rotated.Encode("org-a/keys", "pos-1"), ok: true},
		{name: "old token, new key alone", codec: newOnly, token: tok, ok: false},
		{name: "old token, other scope", codec: rotated, token: old.Encode("org-b/keys", "pos-1"), ok: false},
		{name: "new token, old key alone", codec: old, token: rotated.Encode("org-a/keys", "pos-1"), ok: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pos, err := tc.codec.Decode("org-a/keys", tc.token)
			if tc.ok && (err != nil || pos != "pos-1") {
				t.Fatalf("Decode = %q, %v; want pos-1", pos, err)
			}
			if !tc.ok && !errors.Is(err, ErrInvalid) {
				t.Fatalf("Decode = %q, %v; want ErrInvalid", pos, err)
			}
		})
	}
}
