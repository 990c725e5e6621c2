package bench

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/bench/internal/benchtest"
)

func TestGetRunCountsWrongAnswersAsErrors(t *testing.T) {
	body := []byte("the right bytes")
	s := benchtest.StartCanned(t, body, 0)
	tests := []struct {
		name    string
		expect  []byte // the body the run expects
		ct      string
		wantErr string
	}{
		{"right", body, "image/jpeg", ""},
		{"wrong length", []byte("short"), "image/jpeg", "bytes, want"},
		{"wrong bytes, same length", bytes.ToUpper(body), "image/jpeg", "CRC-32"},
		{"wrong type", body, "image/webp", "Content-Type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := fileSet{contentType: []byte(tt.ct)}
			set.add("/x", tt.expect)
			g := newGetRun(s.Addr(), 1, &set, func(int) int { return 0 })
			defer g.close()
			_, err := g.op(t.Context(), 0) // the first answer of a client has its body checked
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("op = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
