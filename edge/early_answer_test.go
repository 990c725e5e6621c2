package edge

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestEarlyAnswersReachTheClient: answers given before the request's body
// was read (the origin refusing a large upload unread; the edge answering
// /healthz, which reads no body) reach a client that is still sending, every
// time: the connection lingers instead of resetting the answer away. With
// a plain close, some rounds lose it (checked by hand).
func TestEarlyAnswersReachTheClient(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		w.Write([]byte(`{"error":"Payload Too Large","message":"too large","statusCode":413}`))
	}))
	defer origin.Close()
	base := startEdge(t, newTestEdge(t, origin.URL))
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for _, tt := range []struct {
		method, path string
		status       int
		body         string
	}{
		{"POST", "/v1/images", 413, `"statusCode":413`},
		{"GET", "/healthz", 200, `"status"`},
	} {
		for round := range 10 {
			req, err := http.NewRequest(tt.method, base+tt.path, bytes.NewReader(make([]byte, 8<<20)))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("%s %s, round %d: %v", tt.method, tt.path, round, err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != tt.status || !bytes.Contains(body, []byte(tt.body)) {
				t.Fatalf("%s %s, round %d: %d %q (%v)", tt.method, tt.path, round, resp.StatusCode, body, err)
			}
		}
	}
}
