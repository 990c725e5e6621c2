package og

import (
	"encoding/json"
	"testing"
)

func TestScaleOf(t *testing.T) {
	for _, tc := range []struct {
		name, request string
		want          float64
	}{
		{"unset", `{"url":"https://a.example/"}`, 1},
		{"number", `{"device_scale":2}`, 2},
		{"string from a page override", `{"device_scale":"1.5"}`, 1.5},
		{"garbage", `{"device_scale":"x"}`, 1},
		{"zero", `{"device_scale":0}`, 1},
		{"not an object", `[]`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := scaleOf(json.RawMessage(tc.request)); got != tc.want {
				t.Fatalf("scaleOf(%s) = %v, want %v", tc.request, got, tc.want)
			}
		})
	}
}

func TestETagMatch(t *testing.T) {
	for _, tc := range []struct {
		name, header string
		want         bool
	}{
		{"same", `"abc"`, true},
		{"weak", `W/"abc"`, true},
		{"list", `"x", "abc"`, true},
		{"star", `*`, true},
		{"other", `"abd"`, false},
		{"unquoted", `abc`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := etagMatch(tc.header, `"abc"`); got != tc.want {
				t.Fatalf("etagMatch(%s) = %v", tc.header, got)
			}
		})
	}
}
