package edgehub

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/pictorhq/pictor/origin/contract"
)

// MaxTokens bounds the edge tokens a hub accepts at once.
const MaxTokens = 8

// ParseTokens reads the edge tokens a hub accepts: one, or several
// separated by commas or line breaks (--edge-token OLD,NEW, or
// <data-dir>/edge.token with a token a line), so that edges can move from
// one token to another without downtime. Blanks around a token and empty
// entries are ignored; a token given twice counts once. Each token is at
// least contract.MinEdgeToken characters, without control characters. An
// error names the token by its position, never by what it holds.
func ParseTokens(s string) ([]string, error) {
	var tokens []string
	n := 0
	for entry := range strings.FieldsFuncSeq(s, func(r rune) bool { return r == ',' || r == '\n' }) {
		tok := strings.TrimSpace(entry)
		if tok == "" {
			continue
		}
		n++
		switch {
		case n > MaxTokens:
			return nil, fmt.Errorf("more than %d edge tokens", MaxTokens)
		case len(tok) < contract.MinEdgeToken:
			return nil, fmt.Errorf("edge token %d has %d characters; each must be at least %d", n, len(tok), contract.MinEdgeToken)
		case strings.ContainsFunc(tok, func(r rune) bool { return r < 0x20 || r == 0x7f }):
			return nil, fmt.Errorf("edge token %d holds a control character", n)
		}
		if !slices.Contains(tokens, tok) {
			tokens = append(tokens, tok)
		}
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("no edge token: give one of at least %d characters", contract.MinEdgeToken)
	}
	return tokens, nil
}

// token returns the position in the hub's list (from 1) of the token the
// request presents, 0 for none. Every token is compared in constant time,
// whichever matches.
func (h *Hub) token(r *http.Request) int {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return 0
	}
	found := 0
	for i, t := range h.tokens {
		if subtle.ConstantTimeCompare([]byte(tok), []byte(t)) == 1 {
			found = i + 1
		}
	}
	return found
}
