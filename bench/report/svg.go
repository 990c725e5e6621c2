package report

import (
	"fmt"
	"html"
	"math"
	"strings"
	"time"

	"github.com/pictorhq/pictor/bench/load"
)

// Chart geometry, in SVG user units.
const (
	chartWidth   = 960
	chartLeft    = 320 // room for row labels
	chartRight   = 880 // room for value labels after it
	chartBarH    = 9
	chartBarGap  = 2
	chartRowGap  = 14
	chartCDFH    = 280
	chartPadding = 16
)

var (
	quantileColors = [3]string{"#4e79a7", "#f28e2b", "#e15759"}
	quantiles      = [3]float64{0.50, 0.95, 0.99}
	quantileNames  = [3]string{"p50", "p95", "p99"}
	seriesColors   = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
		"#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}
)

// LatencySVG draws the latency of each result, on one logarithmic time
// axis shared by two panels: bars of p50, p95 and p99 per result, then
// the cumulative distribution of every result.
func LatencySVG(results []*load.Result) []byte {
	var drawn []*load.Result
	lo, hi := math.Inf(1), 0.0
	for _, r := range results {
		if r.Latency.Count() == 0 {
			continue
		}
		drawn = append(drawn, r)
		lo = min(lo, toMS(r.Latency.Min()))
		hi = max(hi, toMS(r.Latency.Max()))
	}
	var b strings.Builder
	if len(drawn) == 0 {
		fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="80" viewBox="0 0 %d 80" font-family="sans-serif">`+"\n", chartWidth, chartWidth)
		b.WriteString(`<text x="16" y="44" font-size="14">No successful requests to chart.</text>` + "\n</svg>\n")
		return []byte(b.String())
	}
	sc := newLogScale(lo, hi, chartLeft, chartRight)

	rowH := 3*chartBarH + 2*chartBarGap + chartRowGap
	barsTop := 56.0
	barsBottom := barsTop + float64(len(drawn)*rowH)
	cdfTop := barsBottom + 80
	cdfBottom := cdfTop + chartCDFH
	legendTop := cdfBottom + 48
	height := legendTop + float64(len(drawn))*18 + chartPadding

	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%.0f" viewBox="0 0 %d %.0f" font-family="sans-serif" font-size="12">`+"\n",
		chartWidth, height, chartWidth, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="#fff"/>`+"\n")

	// Panel 1: percentile bars.
	text(&b, chartPadding, 24, "start", 16, "bold", "Latency per run: p50, p95, p99 (log scale)")
	for i, name := range quantileNames {
		x := float64(chartRight - 3*64 + i*64)
		fmt.Fprintf(&b, `<rect x="%.1f" y="14" width="12" height="12" fill="%s"/>`+"\n", x, quantileColors[i])
		text(&b, x+16, 24, "start", 12, "", name)
	}
	grid(&b, sc, barsTop-6, barsBottom)
	for i, r := range drawn {
		y := barsTop + float64(i*rowH)
		text(&b, chartLeft-10, y+float64(3*chartBarH+2*chartBarGap)/2+4, "end", 12, "", r.Label())
		for j, q := range quantiles {
			v := r.Latency.Quantile(q)
			by := y + float64(j*(chartBarH+chartBarGap))
			w := max(sc.X(toMS(v))-chartLeft, 1)
			fmt.Fprintf(&b, `<rect x="%d" y="%.1f" width="%.1f" height="%d" fill="%s"><title>%s %s %s</title></rect>`+"\n",
				chartLeft, by, w, chartBarH, quantileColors[j], esc(r.Label()), quantileNames[j], load.FormatLatency(v))
			text(&b, chartLeft+w+4, by+chartBarH-1, "start", 9, "", load.FormatLatency(v))
		}
	}

	// Panel 2: cumulative distributions.
	text(&b, chartPadding, cdfTop-24, "start", 16, "bold", "Latency CDF (fraction of requests at most x)")
	grid(&b, sc, cdfTop, cdfBottom)
	yOf := func(f float64) float64 { return cdfBottom - f*(cdfBottom-cdfTop) }
	for _, f := range []float64{0, 0.25, 0.5, 0.75, 0.95, 1} {
		dash := ""
		if f == 0.95 {
			dash = ` stroke-dasharray="3,3"`
		}
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"%s/>`+"\n", chartLeft, yOf(f), chartRight, yOf(f), dash)
		text(&b, chartLeft-6, yOf(f)+4, "end", 10, "", fmt.Sprintf("%g%%", f*100))
	}
	for i, r := range drawn {
		color := seriesColors[i%len(seriesColors)]
		var pts strings.Builder
		fmt.Fprintf(&pts, "%.1f,%.1f", sc.X(toMS(r.Latency.Min())), yOf(0))
		for _, p := range r.Latency.CDF() {
			fmt.Fprintf(&pts, " %.1f,%.1f", sc.X(toMS(p.Latency)), yOf(p.Fraction))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"><title>%s</title></polyline>`+"\n",
			color, pts.String(), esc(r.Label()))
		ly := legendTop + float64(i)*18
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-width="3"/>`+"\n",
			chartLeft, ly-4, chartLeft+24, ly-4, color)
		text(&b, chartLeft+30, ly, "start", 12, "", r.Label())
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// grid draws the vertical lines and labels of the time axis between top
// and bottom: solid at powers of ten, dashed at 2× and 5×.
func grid(b *strings.Builder, sc logScale, top, bottom float64) {
	for _, t := range sc.ticks() {
		dash, color := ` stroke-dasharray="2,3"`, "#eee"
		if t.major {
			dash, color = "", "#ccc"
		}
		x := sc.X(t.ms)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"%s/>`+"\n", x, top, x, bottom, color, dash)
		if t.major {
			text(b, x, bottom+14, "middle", 10, "", formatTick(t.ms))
		}
	}
	fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#888"/>`+"\n", chartLeft, bottom, chartRight, bottom)
}

// text writes one text element, its content escaped.
func text(b *strings.Builder, x, y float64, anchor string, size int, weight, s string) {
	w := ""
	if weight != "" {
		w = fmt.Sprintf(` font-weight="%s"`, weight)
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="%s" font-size="%d"%s>%s</text>`+"\n", x, y, anchor, size, w, esc(s))
}

func esc(s string) string { return html.EscapeString(s) }

func toMS(d time.Duration) float64 { return d.Seconds() * 1000 }

// logScale maps milliseconds to x on a log axis spanning whole decades.
type logScale struct {
	loExp, hiExp int // the axis runs from 10^loExp to 10^hiExp ms
	x0, x1       float64
}

// newLogScale returns the smallest whole-decade axis holding [lo, hi] ms;
// values at or below zero count as 1 ns.
func newLogScale(lo, hi, x0, x1 float64) logScale {
	const floor = 1e-6 // 1 ns in ms
	lo, hi = max(lo, floor), max(hi, floor)
	if hi < lo {
		lo, hi = hi, lo
	}
	s := logScale{
		loExp: int(math.Floor(math.Log10(lo) + 1e-9)),
		hiExp: int(math.Ceil(math.Log10(hi) - 1e-9)),
		x0:    x0, x1: x1,
	}
	if s.hiExp <= s.loExp {
		s.hiExp = s.loExp + 1
	}
	return s
}

// X maps ms to x, clamped to the axis.
func (s logScale) X(ms float64) float64 {
	l := math.Log10(max(ms, 1e-12))
	f := (l - float64(s.loExp)) / float64(s.hiExp-s.loExp)
	f = min(max(f, 0), 1)
	return s.x0 + f*(s.x1-s.x0)
}

type tick struct {
	ms    float64
	major bool
}

// ticks returns the grid of the axis: every power of ten (major) and the
// 2× and 5× between them.
func (s logScale) ticks() []tick {
	var ts []tick
	for e := s.loExp; e <= s.hiExp; e++ {
		p := math.Pow(10, float64(e))
		ts = append(ts, tick{p, true})
		if e < s.hiExp {
			ts = append(ts, tick{2 * p, false}, tick{5 * p, false})
		}
	}
	return ts
}

// formatTick labels a power of ten of milliseconds: 1 ns … 100 µs, 1 ms
// … 100 ms, 1 s and up.
func formatTick(ms float64) string {
	switch {
	case ms >= 1000:
		return fmt.Sprintf("%g s", ms/1000)
	case ms >= 1:
		return fmt.Sprintf("%g ms", ms)
	case ms >= 1e-3:
		return fmt.Sprintf("%g µs", math.Round(ms*1e3*1e6)/1e6)
	default:
		return fmt.Sprintf("%g ns", math.Round(ms*1e6*1e6)/1e6)
	}
}
