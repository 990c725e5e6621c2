package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pictorhq/pictor/bench/load"
)

// Report is the outcome of a benchmark run.
type Report struct {
	Meta    Meta
	Results []*load.Result
	// Comparisons are the pairs of results set side by side, Pictor's
	// against its baseline's; a pair with a result missing is left out.
	Comparisons []Comparison
	Checks      []CheckResult
	Failures    []string
}

// Meta describes the machine and the settings of a run.
type Meta struct {
	Started   time.Time
	Host      string  // e.g. "linux/amd64, 2 CPUs"
	CPUs      int     // for judging LoadAvg
	LoadAvg   float64 // one-minute load average at the start; -1 unknown
	Pictor    string  // `pictor version`
	Chromium  string  // `chromium --version`
	Duration  time.Duration
	PoolSize  int
	Scenarios []Scenario
}

// Scenario is a scenario of the run, as the report describes it.
type Scenario struct {
	Name, About string
}

// CheckResult is the verdict of one performance target.
type CheckResult struct {
	Name     string
	Measured string
	Pass     bool
}

// Comparison pairs a Pictor run with the baseline run it is compared with.
type Comparison struct {
	Subject, Baseline string
}

// busyLoad is the load average per CPU above which the report warns that
// other work shared the machine.
const busyLoad = 0.5

// Report file names inside the output directory.
const (
	MarkdownFile = "report.md"
	ChartFile    = "latency.svg"
	JSONFile     = "report.json"
)

// Write writes the Markdown report, its JSON and the latency chart into
// dir.
func (r *Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, MarkdownFile), []byte(r.Markdown()), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ChartFile), LatencySVG(r.Results), 0o644); err != nil {
		return fmt.Errorf("write chart: %w", err)
	}
	j, err := r.JSON()
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, JSONFile), append(j, '\n'), 0o644)
	}
	if err != nil {
		return fmt.Errorf("write report JSON: %w", err)
	}
	return nil
}

// Markdown renders the report: settings, the results table, targets,
// scenario descriptions and errors.
func (r *Report) Markdown() string {
	var b strings.Builder
	b.WriteString("# Pictor load benchmark\n\n")
	var meta []string
	if !r.Meta.Started.IsZero() {
		meta = append(meta, r.Meta.Started.UTC().Format("2006-01-02 15:04 UTC"))
	}
	for _, s := range []string{r.Meta.Host, r.Meta.Pictor, r.Meta.Chromium} {
		if s != "" {
			meta = append(meta, s)
		}
	}
	if r.Meta.Duration > 0 {
		meta = append(meta, r.Meta.Duration.String()+" per run")
	}
	if r.Meta.PoolSize > 0 {
		meta = append(meta, fmt.Sprintf("render pool %d", r.Meta.PoolSize))
	}
	if r.Meta.LoadAvg >= 0 && r.Meta.CPUs > 0 {
		meta = append(meta, fmt.Sprintf("load average %.2f at start", r.Meta.LoadAvg))
	}
	if len(meta) > 0 {
		b.WriteString(strings.Join(meta, " · ") + "\n\n")
	}
	if r.Meta.CPUs > 0 && r.Meta.LoadAvg > busyLoad*float64(r.Meta.CPUs) {
		fmt.Fprintf(&b, "**Warning:** the machine was busy when the run started (load average %.2f on %d CPUs); other work competed with these figures.\n\n",
			r.Meta.LoadAvg, r.Meta.CPUs)
	}
	b.WriteString(MarkdownTable(r.Results))
	if len(r.Results) > 0 {
		fmt.Fprintf(&b, "\nreq/s counts successful requests per second of wall time; latencies are of successful requests. Chart: [%s](%s).\n", ChartFile, ChartFile)
	}
	if cmp := ComparisonTable(r.Comparisons, r.Results); cmp != "" {
		b.WriteString("\nPictor against its baseline, run interleaved in rounds on the same machine: " +
			"Pictor's figure divided by the baseline's (req/s above 1× and latencies below 1× favor Pictor).\n\n")
		b.WriteString(cmp)
	}
	if cpu := CPUTable(r.Results); cpu != "" {
		b.WriteString("\nCPU time of the system under test (`pictor serve` with its Chromium; each CLI Chromium with its helpers; Node with the Chromium Puppeteer drives) " +
			"per successful request, and how many cores it kept busy on average. N cores cap a run at N ÷ (CPU per request) requests per second.\n\n")
		b.WriteString(cpu)
	}
	if len(r.Checks) > 0 {
		b.WriteString("\n## Targets\n\n| target | measured | result |\n|---|---|---|\n")
		for _, c := range r.Checks {
			verdict := "FAIL"
			if c.Pass {
				verdict = "pass"
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", cell(c.Name), cell(c.Measured), verdict)
		}
	}
	if len(r.Meta.Scenarios) > 0 {
		b.WriteString("\n## Scenarios\n\n")
		for _, s := range r.Meta.Scenarios {
			fmt.Fprintf(&b, "- **%s**: %s\n", s.Name, s.About)
		}
	}
	var notes []string
	for _, res := range r.Results {
		if res.Note != "" {
			notes = append(notes, fmt.Sprintf("- %s: %s\n", cell(res.Name), oneLine(res.Note)))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n## Notes\n\n" + strings.Join(notes, ""))
	}
	var errs []string
	for _, res := range r.Results {
		if res.Errors > 0 {
			errs = append(errs, fmt.Sprintf("%s: %d of %d failed; first: %s", res.Name, res.Errors, res.Requests, res.FirstError))
		}
	}
	errs = append(errs, r.Failures...)
	if len(errs) > 0 {
		b.WriteString("\n## Errors\n\n")
		for _, e := range errs {
			fmt.Fprintf(&b, "- %s\n", oneLine(e))
		}
	}
	return b.String()
}

// MarkdownTable renders one row per result: scenario, requests, req/s,
// p50, p95, p99, errors.
func MarkdownTable(results []*load.Result) string {
	var b strings.Builder
	b.WriteString("| scenario | requests | req/s | p50 | p95 | p99 | errors |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		q := func(p float64) string {
			if r.Latency.Count() == 0 {
				return "–"
			}
			return load.FormatLatency(r.Latency.Quantile(p))
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %d |\n",
			cell(r.Label()), r.Requests, load.FormatRate(r.Rate()), q(0.50), q(0.95), q(0.99), r.Errors)
	}
	return b.String()
}

// CPUTable renders the CPU cost of the results that measured it, or ""
// when none did.
func CPUTable(results []*load.Result) string {
	var b strings.Builder
	for _, r := range results {
		if r.CPU <= 0 || r.Elapsed <= 0 {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("| scenario | CPU per request | cores busy |\n|---|---:|---:|\n")
		}
		per := "–"
		if r.Requests > r.Errors {
			per = load.FormatLatency(r.CPUPerRequest())
		}
		fmt.Fprintf(&b, "| %s | %s | %.2f |\n", cell(r.Label()), per, r.CPU.Seconds()/r.Elapsed.Seconds())
	}
	return b.String()
}

// ComparisonTable renders one row per comparison whose two runs are in
// results: req/s and latency quantiles of Pictor divided by the
// baseline's (a rate above 1 and latencies below 1 favor Pictor), or ""
// when no pair is complete.
func ComparisonTable(cmps []Comparison, results []*load.Result) string {
	find := func(name string) *load.Result {
		for _, r := range results {
			if r.Name == name {
				return r
			}
		}
		return nil
	}
	ratio := func(a, b float64) string {
		if b <= 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f×", a/b)
	}
	q := func(r *load.Result, p float64) float64 {
		if r.Latency.Count() == 0 {
			return 0
		}
		return r.Latency.Quantile(p).Seconds()
	}
	var b strings.Builder
	for _, c := range cmps {
		s, base := find(c.Subject), find(c.Baseline)
		if s == nil || base == nil {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("| Pictor run | baseline | req/s ratio | p50 ratio | p95 ratio | p99 ratio |\n")
			b.WriteString("|---|---|---:|---:|---:|---:|\n")
		}
		rate := ratio(s.Rate(), base.Rate())
		p50, p95, p99 := "–", "–", "–"
		if s.Latency.Count() > 0 {
			p50, p95, p99 = ratio(q(s, 0.50), q(base, 0.50)), ratio(q(s, 0.95), q(base, 0.95)), ratio(q(s, 0.99), q(base, 0.99))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", cell(c.Subject), cell(c.Baseline), rate, p50, p95, p99)
	}
	return b.String()
}

// cell makes s safe inside a Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(oneLine(s), "|", `\|`)
}

// oneLine joins the lines of s with spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
