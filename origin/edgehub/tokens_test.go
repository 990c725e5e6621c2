package edgehub_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/edgehub"
)

func TestParseTokens(t *testing.T) {
	a, b := strings.Repeat("a", contract.MinEdgeToken), "token-b-"+strings.Repeat("b", 20)
	tests := []struct {
		name string
		in   string
		want []string
		// bad is what the error must say; "" for none.
		bad string
	}{
		{name: "one", in: a, want: []string{a}},
		{name: "flag list", in: a + "," + b, want: []string{a, b}},
		{name: "file lines", in: a + "\r\n" + b + "\n\n", want: []string{a, b}},
		{name: "blanks and a trailing comma", in: " " + a + " ,\t" + b + " ,", want: []string{a, b}},
		{name: "repeated", in: a + "," + b + "," + a, want: []string{a, b}},
		{name: "inner space kept", in: "a pass phrase of some length", want: []string{"a pass phrase of some length"}},
		{name: "empty", in: "", bad: strconv.Itoa(contract.MinEdgeToken)},
		{name: "blanks only", in: " ,\n ", bad: strconv.Itoa(contract.MinEdgeToken)},
		{name: "second short", in: a + ",short-token", bad: "edge token 2 has 11 characters"},
		{name: "control character", in: a + "," + b + "\x01x", bad: "edge token 2 holds a control character"},
		{name: "too many", in: strings.Repeat(a+"x,", edgehub.MaxTokens) + a, bad: "more than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := edgehub.ParseTokens(tc.in)
			if tc.bad != "" {
				if err == nil || !strings.Contains(err.Error(), tc.bad) {
					t.Fatalf("ParseTokens = %q, %v; want an error saying %q", got, err, tc.bad)
				}
				if strings.Contains(err.Error(), "short-token") || strings.Contains(err.Error(), a) {
					t.Fatalf("the error %q repeats a token", err)
				}
				return
			}
			if err != nil || strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("ParseTokens = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func FuzzParseTokens(f *testing.F) {
	f.Add(strings.Repeat("a", contract.MinEdgeToken))
	f.Add("old-token-0123456789,new-token-0123456789")
	f.Add("old-token-0123456789\nnew-token-0123456789\n")
	f.Add(" ,\x00,\n")
	f.Fuzz(func(t *testing.T, s string) {
		tokens, err := edgehub.ParseTokens(s)
		if err != nil {
			return
		}
		if len(tokens) == 0 || len(tokens) > edgehub.MaxTokens {
			t.Fatalf("%d tokens accepted", len(tokens))
		}
		seen := map[string]bool{}
		for _, tok := range tokens {
			if len(tok) < contract.MinEdgeToken || tok != strings.TrimSpace(tok) || strings.ContainsAny(tok, ",\n\r\x00") || seen[tok] {
				t.Fatalf("accepted token %q", tok)
			}
			seen[tok] = true
		}
		// The list written as a flag reads the same.
		again, err := edgehub.ParseTokens(strings.Join(tokens, ","))
		if err != nil || strings.Join(again, "\n") != strings.Join(tokens, "\n") {
			t.Fatalf("the tokens written again read %q, %v", again, err)
		}
	})
}

// TestSeveralTokens: a hub given two tokens opens the channel to an edge
// presenting either, at once, and refuses any other with the 401
// challenge; a hub given only the second refuses the first.
func TestSeveralTokens(t *testing.T) {
	oldToken, newToken := "old-edge-token-0123456789", "new-edge-token-0123456789"
	for _, tc := range []struct {
		name     string
		accepted string
		want     map[string]int
	}{
		{name: "both", accepted: oldToken + "," + newToken, want: map[string]int{oldToken: 200, newToken: 200, "other-edge-token-0123456789": 401, oldToken + "," + newToken: 401}},
		{name: "new only", accepted: newToken, want: map[string]int{oldToken: 401, newToken: 200}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := openStore(t, t.TempDir())
			defer store.Close()
			hub, err := edgehub.New(t.Context(), store, tc.accepted)
			if err != nil {
				t.Fatal(err)
			}
			defer hub.Close()
			srv := httptest.NewServer(hub)
			defer srv.Close()
			for tok, status := range tc.want {
				ctx, cancel := context.WithCancel(context.Background())
				pr, pw := io.Pipe()
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+contract.StreamPath, pr)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+tok)
				resp, err := srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != status {
					t.Fatalf("token %d characters: %d, want %d", len(tok), resp.StatusCode, status)
				}
				if status == 401 && !strings.Contains(resp.Header.Get("WWW-Authenticate"), contract.StreamRealm) {
					t.Fatalf("refusal without the challenge: %v", resp.Header)
				}
				pw.Close()
				resp.Body.Close()
				cancel()
			}
		})
	}
}
