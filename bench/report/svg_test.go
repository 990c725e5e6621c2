package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/bench/internal/benchtest"
	"github.com/pictorhq/pictor/bench/load"
)

// svgElements parses an SVG document strictly and counts its elements by
// name; it fails the test when the document is not well-formed XML.
func svgElements(t *testing.T, doc []byte) (map[string]int, []string) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Strict = true
	counts := map[string]int{}
	var texts []string
	inText := false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("chart is not well-formed XML: %v\n%s", err, doc)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			counts[tok.Name.Local]++
			inText = tok.Name.Local == "text"
		case xml.EndElement:
			inText = false
		case xml.CharData:
			if inText {
				texts = append(texts, string(tok))
			}
		}
	}
	return counts, texts
}

func TestLatencySVG(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name      string
		results   []*load.Result
		wantRows  int      // results drawn
		wantTexts []string // among the text elements
		wantTicks []string // axis labels
	}{
		{
			name:      "no results",
			results:   nil,
			wantTexts: []string{"No successful requests to chart."},
		},
		{
			name:      "only failures",
			results:   []*load.Result{benchtest.Result("down", 1, 0, 5, time.Second, 0, 0)},
			wantTexts: []string{"No successful requests to chart."},
		},
		{
			name: "renders and baseline",
			results: []*load.Result{
				benchtest.Result("render-card/sequential", 1, 50, 0, 5*time.Second, 60*ms, 140*ms),
				benchtest.Result("render-card/pool-full", 4, 80, 0, 5*time.Second, 100*ms, 300*ms),
				benchtest.Result("chromium-cli/sequential", 1, 4, 0, 5*time.Second, 1300*ms, 1600*ms),
			},
			wantRows:  3,
			wantTexts: []string{"render-card/pool-full (4 clients)", "chromium-cli/sequential (1 client)", "p50", "p99"},
			wantTicks: []string{"10 ms", "100 ms", "1 s", "10 s"},
		},
		{
			name: "labels are escaped and failed rows skipped",
			results: []*load.Result{
				benchtest.Result(`<edge & "hot">`, 2, 1000, 0, time.Second, 20*time.Microsecond, 90*time.Microsecond),
				benchtest.Result("down", 1, 0, 5, time.Second, 0, 0),
			},
			wantRows:  1,
			wantTexts: []string{`<edge & "hot"> (2 clients)`},
			wantTicks: []string{"10 µs", "100 µs"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := LatencySVG(tt.results)
			counts, texts := svgElements(t, doc)
			if counts["svg"] != 1 {
				t.Fatalf("%d svg elements", counts["svg"])
			}
			// Three bars per row (with a title each) and one CDF line per row.
			if got := counts["title"]; got != 4*tt.wantRows {
				t.Errorf("%d title elements, want %d (3 bars + 1 line per row)", got, 4*tt.wantRows)
			}
			if got := counts["polyline"]; got != tt.wantRows {
				t.Errorf("%d CDF lines, want %d", got, tt.wantRows)
			}
			all := strings.Join(texts, "\n")
			for _, w := range append(tt.wantTexts, tt.wantTicks...) {
				if !strings.Contains("\n"+all+"\n", "\n"+w+"\n") {
					t.Errorf("no text %q among:\n%s", w, all)
				}
			}
		})
	}
}

func TestLogScale(t *testing.T) {
	tests := []struct {
		name         string
		lo, hi       float64 // ms
		wantLo       int
		wantHi       int
		wantMajor    []string
		wantMidpoint float64 // ms at the middle of the axis
	}{
		{"renders", 45, 1700, 1, 4, []string{"10 ms", "100 ms", "1 s", "10 s"}, 316.227766},
		{"exact decades", 10, 100, 1, 2, []string{"10 ms", "100 ms"}, 31.622777},
		{"one value", 50, 50, 1, 2, []string{"10 ms", "100 ms"}, 31.622777},
		{"one decade value", 100, 100, 2, 3, []string{"100 ms", "1 s"}, 316.227766},
		{"microseconds", 0.02, 0.09, -2, -1, []string{"10 µs", "100 µs"}, 0.0316227766},
		{"zero counts as a nanosecond", 0, 0.5, -6, 0, []string{"1 ns", "10 ns", "100 ns", "1 µs", "10 µs", "100 µs", "1 ms"}, 0.001},
		{"swapped bounds", 1700, 45, 1, 4, []string{"10 ms", "100 ms", "1 s", "10 s"}, 316.227766},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newLogScale(tt.lo, tt.hi, 100, 500)
			if s.loExp != tt.wantLo || s.hiExp != tt.wantHi {
				t.Fatalf("axis 10^%d … 10^%d ms, want 10^%d … 10^%d", s.loExp, s.hiExp, tt.wantLo, tt.wantHi)
			}
			var major []string
			for _, tk := range s.ticks() {
				if tk.major {
					major = append(major, formatTick(tk.ms))
				}
			}
			if strings.Join(major, ",") != strings.Join(tt.wantMajor, ",") {
				t.Errorf("major ticks %v, want %v", major, tt.wantMajor)
			}
			if x := s.X(math.Pow(10, float64(s.loExp))); math.Abs(x-100) > 1e-9 {
				t.Errorf("X(axis start) = %v, want 100", x)
			}
			if x := s.X(math.Pow(10, float64(s.hiExp))); math.Abs(x-500) > 1e-9 {
				t.Errorf("X(axis end) = %v, want 500", x)
			}
			if x := s.X(tt.wantMidpoint); math.Abs(x-300) > 1e-3 {
				t.Errorf("X(%v) = %v, want 300", tt.wantMidpoint, x)
			}
			if x := s.X(0); x != 100 {
				t.Errorf("X(0) = %v, want it clamped to 100", x)
			}
			if x := s.X(1e9); x != 500 {
				t.Errorf("X(1e9) = %v, want it clamped to 500", x)
			}
		})
	}
}
