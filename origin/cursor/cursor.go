package cursor

import (
	"encoding/base64"

	"github.com/pictorhq/pictor/origin/seal"
)

const macLen = 16

// maxToken bounds decoding work on hostile input.
const maxToken = 1024

// Codec encodes tokens under one MAC key and decodes tokens under it or
// under a previous one.
type Codec struct{ keys [][]byte }

// New returns a Codec that signs with key and also accepts tokens signed
// with the previous keys: seal.Box.MACKeys, the current key first, so that
// cursors handed out before a master key rotation keep working.
func New(key []byte, previous ...[]byte) Codec {
	return Codec{keys: append([][]byte{key}, previous...)}
}

// Encode returns the token for position within scope.
func (c Codec) Encode(scope, position string) string {
	mac := seal.Sign(c.keys[0], message(scope, position))
	return base64.RawURLEncoding.EncodeToString(append([]byte(position), mac...))
}

// Decode returns the position of a token issued by Encode for scope.
func (c Codec) Decode(scope, token string) (string, error) {
	if len(token) > maxToken {
		return "", ErrInvalid
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	// Only the canonical spelling is accepted: the decoder tolerates
	// line breaks and stray trailing bits that Encode never writes.
	if err != nil || len(raw) <= macLen || base64.RawURLEncoding.EncodeToString(raw) != token {
		return "", ErrInvalid
	}
	position, mac := string(raw[:len(raw)-macLen]), raw[len(raw)-macLen:]
	msg := message(scope, position)
	for _, key := range c.keys {
		if seal.Verify(key, msg, mac) {
			return position, nil
		}
	}
	return "", ErrInvalid
}

func message(scope, position string) []byte {
	return []byte(scope + "\x00" + position)
}
