package load

import (
	"testing"
	"time"
)

func TestFormatLatency(t *testing.T) {
	tests := []struct {
		name string
		d    time.Duration
		want string
	}{
		{"zero", 0, "0.000 ms"},
		{"microseconds", 42 * time.Microsecond, "0.042 ms"},
		{"single ms", 4210 * time.Microsecond, "4.21 ms"},
		{"tens of ms", 42100 * time.Microsecond, "42.1 ms"},
		{"hundreds of ms", 421 * time.Millisecond, "421 ms"},
		{"seconds stay in ms", 1523 * time.Millisecond, "1523 ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FormatLatency(tt.d); got != tt.want {
				t.Fatalf("FormatLatency(%v) = %q, want %q", tt.d, got, tt.want)
			}
		})
	}
}

func TestFormatRate(t *testing.T) {
	tests := []struct {
		name string
		r    float64
		want string
	}{
		{"zero", 0, "0.00"},
		{"slow", 0.745, "0.74"},
		{"tens", 18.26, "18.3"},
		{"thousands", 75123.4, "75123"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FormatRate(tt.r); got != tt.want {
				t.Fatalf("FormatRate(%v) = %q, want %q", tt.r, got, tt.want)
			}
		})
	}
}
