package observability

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/contract/apitest"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v2"

	"github.com/pictorhq/pictor/bench/pictor"
	"github.com/pictorhq/pictor/origin/storage/s3test"
)

// The files under test, relative to this package.
const (
	rulesFile     = "prometheus/pictor-alerts.yml"
	scrapeFile    = "prometheus/prometheus.yml"
	dashboardFile = "grafana/pictor.json"
)

// grafanaSchemaVersion is the classic dashboard model's schema version of
// current Grafana (42, its last).
const grafanaSchemaVersion = 42

// scrapeJobs are the job names of the scrape example, which the rules and
// the dashboard's $job variable rely on.
var scrapeJobs = []string{"pictor-edge", "pictor-origin"}

// prometheusMade are series Prometheus makes itself for every target,
// which no /metrics lists.
var prometheusMade = map[string]bool{"up": true}

// promql is Prometheus's own PromQL parser, default options.
var promql = parser.NewParser(parser.Options{})

// TestRules parses the alert rules with Prometheus's rule parser (which
// also parses each expression and annotation template) and checks what
// each alert must carry: a for duration, a severity, a summary, a
// description and a runbook in docs/operations.md.
func TestRules(t *testing.T) {
	groups := parseRules(t)
	if len(groups.Groups) == 0 {
		t.Fatal("no rule groups")
	}
	alerts := map[string]bool{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			t.Run(g.Name+"/"+r.Alert, func(t *testing.T) {
				if r.Alert == "" {
					t.Fatalf("recording rule %q: this file holds alerts only", r.Record)
				}
				if alerts[r.Alert] {
					t.Errorf("alert %s defined twice", r.Alert)
				}
				alerts[r.Alert] = true
				if r.For <= 0 {
					t.Error("no for: duration: one bad scrape would page")
				}
				if s := r.Labels["severity"]; s != "critical" && s != "warning" {
					t.Errorf("severity %q, want critical or warning", s)
				}
				for _, a := range []string{"summary", "description"} {
					if strings.TrimSpace(r.Annotations[a]) == "" {
						t.Errorf("no %s annotation", a)
					}
				}
				if _, err := runbookAnchor(r.Annotations["runbook_url"]); err != nil {
					t.Error(err)
				}
				if _, err := promql.ParseExpr(r.Expr); err != nil {
					t.Errorf("expr: %v", err)
				}
			})
		}
	}
}

// TestDashboard parses the dashboard: the current schema, a Prometheus
// data source variable that every panel and query uses, job and instance
// variables, and every PromQL expression (the variables' queries included)
// parsed by Prometheus's parser once Grafana's variables are put in.
func TestDashboard(t *testing.T) {
	d := readDashboard(t)
	if d.SchemaVersion != grafanaSchemaVersion {
		t.Errorf("schemaVersion %d, want %d", d.SchemaVersion, grafanaSchemaVersion)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q, title %q: both needed for provisioning", d.UID, d.Title)
	}
	vars := map[string]variable{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v
	}
	if ds := vars["datasource"]; ds.Type != "datasource" || ds.Query != "prometheus" {
		t.Errorf("variable datasource: type %q query %v, want a prometheus data source variable", ds.Type, ds.Query)
	}
	for _, name := range []string{"job", "instance"} {
		v := vars[name]
		if v.Type != "query" || v.Datasource.UID != "${datasource}" {
			t.Errorf("variable %s: type %q on %q, want a query on ${datasource}", name, v.Type, v.Datasource.UID)
		}
	}
	rows, graphs := 0, 0
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			rows++
			continue
		}
		graphs++
		if p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: data source %q, want ${datasource}", p.Title, p.Datasource.UID)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			if q.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q query %s: data source %q, want ${datasource}", p.Title, q.RefID, q.Datasource.UID)
			}
			if !strings.Contains(q.Expr, `instance=~"$instance"`) {
				t.Errorf("panel %q query %s does not follow the instance variable: %s", p.Title, q.RefID, q.Expr)
			}
		}
	}
	if rows < 6 || graphs < rows {
		t.Errorf("%d rows and %d panels, want the six rows filled", rows, graphs)
	}
	exprs := dashboardExprs(t, d)
	for _, e := range exprs {
		if _, err := promql.ParseExpr(e.expr); err != nil {
			t.Errorf("%s: %v\n%s", e.where, err, e.expr)
		}
	}
}

// TestScrapeExample reads the scrape example: both tiers under the job
// names the rules expect, and the rules file it loads.
func TestScrapeExample(t *testing.T) {
	b, err := os.ReadFile(scrapeFile)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Global struct {
			ScrapeInterval     string `yaml:"scrape_interval"`
			EvaluationInterval string `yaml:"evaluation_interval"`
		} `yaml:"global"`
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			MetricsPath   string `yaml:"metrics_path"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
		Alerting struct {
			Alertmanagers []struct {
				StaticConfigs []struct {
					Targets []string `yaml:"targets"`
				} `yaml:"static_configs"`
			} `yaml:"alertmanagers"`
		} `yaml:"alerting"`
	}
	if err := yaml.UnmarshalStrict(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cfg.RuleFiles, filepath.Base(rulesFile)) {
		t.Errorf("rule_files %v does not load %s", cfg.RuleFiles, filepath.Base(rulesFile))
	}
	var jobs []string
	for _, sc := range cfg.ScrapeConfigs {
		jobs = append(jobs, sc.JobName)
		if sc.MetricsPath != "/metrics" {
			t.Errorf("job %s scrapes %q, want /metrics", sc.JobName, sc.MetricsPath)
		}
		if len(sc.StaticConfigs) == 0 || len(sc.StaticConfigs[0].Targets) == 0 {
			t.Errorf("job %s has no target", sc.JobName)
		}
	}
	if !slices.Equal(jobs, scrapeJobs) {
		t.Errorf("jobs %v, want %v", jobs, scrapeJobs)
	}
	// The rules that name jobs name these.
	for _, r := range allRules(t) {
		expr, err := promql.ParseExpr(r.Expr)
		if err != nil {
			continue // TestRules reports it
		}
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok {
				for _, m := range vs.LabelMatchers {
					if m.Name != "job" {
						continue
					}
					for _, j := range scrapeJobs {
						if !m.Matches(j) {
							t.Errorf("alert %s: job matcher %s misses job %s", r.Alert, m, j)
						}
					}
				}
			}
			return nil
		})
	}
}

// TestRunbookAnchors: every runbook the alerts link is a section of
// docs/operations.md.
func TestRunbookAnchors(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(moduleRoot(t), "docs", "operations.md"))
	if err != nil {
		t.Fatalf("the alerts' runbooks: %v", err)
	}
	have := markdownAnchors(string(doc))
	for _, r := range allRules(t) {
		a, err := runbookAnchor(r.Annotations["runbook_url"])
		if err != nil {
			continue // TestRules reports it
		}
		if !have[a] {
			t.Errorf("alert %s: docs/operations.md has no section #%s", r.Alert, a)
		}
	}
}

// TestReferencedNames checks the extraction the metrics test relies on: a
// histogram's series, names in __name__ matchers, and a name no exposition
// has are all found.
func TestReferencedNames(t *testing.T) {
	exported := exportedNames(map[string]*dto.MetricFamily{
		"a_seconds": {Name: new("a_seconds"), Type: dto.MetricType_HISTOGRAM.Enum()},
		"b_seconds": {Name: new("b_seconds"), Type: dto.MetricType_SUMMARY.Enum()},
		"c_total":   {Name: new("c_total"), Type: dto.MetricType_COUNTER.Enum()},
	})
	tests := []struct {
		name     string
		expr     string
		names    []string
		missing  []string
		parseErr bool
	}{
		{name: "histogram buckets", expr: `histogram_quantile(0.99, sum by (le) (rate(a_seconds_bucket[5m])))`, names: []string{"a_seconds_bucket"}},
		{name: "summary", expr: `rate(b_seconds_sum[5m]) / rate(b_seconds_count[5m]) + b_seconds{quantile="1"}`, names: []string{"b_seconds", "b_seconds_count", "b_seconds_sum"}},
		{name: "no histogram suffix on a counter", expr: `c_total_bucket`, names: []string{"c_total_bucket"}, missing: []string{"c_total_bucket"}},
		{name: "name matcher", expr: `{__name__=~"c_total|d_total", job="x"}`, names: []string{"c_total", "d_total"}, missing: []string{"d_total"}},
		{name: "binary and on", expr: `(c_total / e_total > 0.8) and on (job) a_seconds_count`, names: []string{"a_seconds_count", "c_total", "e_total"}, missing: []string{"e_total"}},
		{name: "made by Prometheus", expr: `up{job="x"} == 0`, names: []string{"up"}},
		{name: "a name regexp that is no list", expr: `{__name__=~"c_.*"}`, parseErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expr, err := promql.ParseExpr(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			names, err := metricNames(expr)
			if tt.parseErr {
				if err == nil {
					t.Fatalf("names %v, want an error", names)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(names, tt.names) {
				t.Errorf("names %v, want %v", names, tt.names)
			}
			var missing []string
			for _, n := range names {
				if !exported[n] && !prometheusMade[n] {
					missing = append(missing, n)
				}
			}
			if !slices.Equal(missing, tt.missing) {
				t.Errorf("missing %v, want %v", missing, tt.missing)
			}
		})
	}
}

// TestWantSeries checks the series check the metrics test relies on:
// equality matchers are looked for (job and instance aside), in a
// histogram's series and a summary's quantiles too.
func TestWantSeries(t *testing.T) {
	label := func(n, v string) *dto.LabelPair { return &dto.LabelPair{Name: new(n), Value: new(v)} }
	families := map[string]*dto.MetricFamily{
		"r_total": {Name: new("r_total"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{
			{Label: []*dto.LabelPair{label("result", "ok"), label("op", "get")}},
		}},
		"d_seconds": {Name: new("d_seconds"), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{
			{Label: []*dto.LabelPair{label("op", "get")}},
		}},
		"g_seconds": {Name: new("g_seconds"), Type: dto.MetricType_SUMMARY.Enum(), Metric: []*dto.Metric{
			{Summary: &dto.Summary{Quantile: []*dto.Quantile{{Quantile: new(0.5)}, {Quantile: new(1.0)}}}},
		}},
	}
	tests := []struct {
		name   string
		expr   string
		want   []string // the selectors checked
		absent []string // those no series matches
	}{
		{name: "exported", expr: `rate(r_total{result="ok", job=~"$job"}[5m])`, want: []string{`r_total{result="ok"}`}},
		{name: "not yet exported", expr: `rate(r_total{result="unavailable"}[5m])`, want: []string{`r_total{result="unavailable"}`}, absent: []string{`r_total{result="unavailable"}`}},
		{name: "two labels of one series", expr: `r_total{result="ok", op="get"}`, want: []string{`r_total{op="get", result="ok"}`}},
		{name: "two labels of no one series", expr: `r_total{result="ok", op="put"}`, want: []string{`r_total{op="put", result="ok"}`}, absent: []string{`r_total{op="put", result="ok"}`}},
		{name: "regexp and job, instance left out", expr: `r_total{result=~"5..", job="a", instance="b"}`},
		{name: "histogram series", expr: `d_seconds_count{op="get"} + d_seconds_bucket{op="put"}`, want: []string{`d_seconds_count{op="get"}`, `d_seconds_bucket{op="put"}`}, absent: []string{`d_seconds_bucket{op="put"}`}},
		{name: "summary quantile", expr: `g_seconds{quantile="1"} + g_seconds{quantile="0.99"}`, want: []string{`g_seconds{quantile="1"}`, `g_seconds{quantile="0.99"}`}, absent: []string{`g_seconds{quantile="0.99"}`}},
		{name: "no such suffix on a counter", expr: `r_total_count{result="ok"}`, want: []string{`r_total_count{result="ok"}`}, absent: []string{`r_total_count{result="ok"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expr, err := promql.ParseExpr(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			var got, absent []string
			for _, s := range wantSeries(expr) {
				got = append(got, s.String())
				if !s.matchedBy(families) {
					absent = append(absent, s.String())
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("selectors %v, want %v", got, tt.want)
			}
			if !slices.Equal(absent, tt.absent) {
				t.Errorf("absent %v, want %v", absent, tt.absent)
			}
		})
	}
}

// TestMetricsExported starts a real `pictor serve` (built from this
// checkout; its blobs on a real S3-compatible server, so that the S3
// store's metrics exist), makes an image and reads it through the edge,
// scrapes the edge's and the origin's /metrics, and checks that every
// metric the rules and the dashboard name is exported by one of them.
func TestMetricsExported(t *testing.T) {
	referenced := map[string][]string{} // metric name → where it is used
	type locatedSelector struct {
		where string
		s     selector
	}
	var series []locatedSelector
	for _, r := range allRules(t) {
		expr, err := promql.ParseExpr(r.Expr)
		if err != nil {
			t.Fatalf("alert %s: %v", r.Alert, err)
		}
		names, err := metricNames(expr)
		if err != nil {
			t.Fatalf("alert %s: %v", r.Alert, err)
		}
		for _, n := range names {
			referenced[n] = append(referenced[n], "alert "+r.Alert)
		}
		for _, sel := range wantSeries(expr) {
			series = append(series, locatedSelector{"alert " + r.Alert, sel})
		}
	}
	for _, e := range dashboardExprs(t, readDashboard(t)) {
		expr, err := promql.ParseExpr(e.expr)
		if err != nil {
			t.Fatalf("%s: %v", e.where, err)
		}
		names, err := metricNames(expr)
		if err != nil {
			t.Fatalf("%s: %v", e.where, err)
		}
		for _, n := range names {
			referenced[n] = append(referenced[n], e.where)
		}
		for _, sel := range wantSeries(expr) {
			series = append(series, locatedSelector{e.where, sel})
		}
	}

	srv := startServe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// One render (its POST relayed by the edge to the origin), and its
	// image read twice through the edge: a miss filled from the origin,
	// then a hit.
	id, err := srv.CreateImage(ctx, map[string]any{"html": "<p style='font-size:40px'>observability</p>", "viewport_width": 320, "viewport_height": 200})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, ct, err := srv.Fetch(ctx, "/v1/image/"+id); err != nil || ct != "image/png" {
			t.Fatalf("GET the image: %q, %v", ct, err)
		}
	}

	// Some families appear with background work (the image's PutObject
	// to S3 makes the S3 store's request histogram and attempt counts):
	// scrape both tiers until nothing is missing, for at most a minute.
	check := func() (missing, absent []string) {
		families := map[string]*dto.MetricFamily{} // both tiers' (process and Go ones twice: the edge's kept)
		for _, base := range []string{srv.URL, srv.OriginURL} {
			for name, mf := range scrape(ctx, t, srv.Client, base+"/metrics") {
				if _, ok := families[name]; !ok {
					families[name] = mf
				}
			}
		}
		exported := exportedNames(families)
		for n, where := range referenced {
			if !exported[n] && !prometheusMade[n] {
				missing = append(missing, fmt.Sprintf("%s (in %s)", n, strings.Join(slices.Compact(where), "; ")))
			}
		}
		for _, sel := range series {
			if exported[sel.s.name] && !sel.s.matchedBy(families) {
				absent = append(absent, fmt.Sprintf("%s (in %s)", sel.s, sel.where))
			}
		}
		sort.Strings(missing)
		sort.Strings(absent)
		return missing, slices.Compact(absent)
	}
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	missing, absent := check()
	for (len(missing) > 0 || len(absent) > 0) && time.Now().Before(deadline) {
		<-tick.C
		missing, absent = check()
	}
	if len(missing) > 0 {
		t.Errorf("%d metrics named by the rules or the dashboard are not exported by pictor serve:\n  %s",
			len(missing), strings.Join(missing, "\n  "))
	}
	if len(absent) > 0 {
		t.Errorf("%d series the rules or the dashboard select are not exported before their first event (export them at 0):\n  %s",
			len(absent), strings.Join(absent, "\n  "))
	}
	if len(referenced) < 40 {
		t.Errorf("only %d metric names found in the rules and the dashboard: the extraction is broken", len(referenced))
	}
}

// parseRules parses the rules file with Prometheus's rule parser, unknown
// fields refused.
func parseRules(t *testing.T) *rulefmt.RuleGroups {
	t.Helper()
	groups, errs := rulefmt.ParseFile(rulesFile, false, model.LegacyValidation, promql, slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Error(err)
	}
	if len(errs) > 0 {
		t.FailNow()
	}
	return groups
}

func allRules(t *testing.T) []rulefmt.Rule {
	t.Helper()
	var rules []rulefmt.Rule
	for _, g := range parseRules(t).Groups {
		rules = append(rules, g.Rules...)
	}
	return rules
}

// runbookRE is the runbook_url every alert carries.
var runbookRE = regexp.MustCompile(`^docs/operations\.md#([a-z0-9]+(?:-[a-z0-9]+)*)$`)

func runbookAnchor(url string) (string, error) {
	m := runbookRE.FindStringSubmatch(url)
	if m == nil {
		return "", fmt.Errorf("runbook_url %q, want docs/operations.md#<section>", url)
	}
	return m[1], nil
}

// markdownAnchors returns the anchors of a Markdown document's headings,
// as GitHub makes them (lower case, punctuation dropped, spaces as
// hyphens), and of explicit id="…" attributes.
func markdownAnchors(doc string) map[string]bool {
	anchors := map[string]bool{}
	drop := regexp.MustCompile(`[^\p{L}\p{N} _-]`)
	for line := range strings.Lines(doc) {
		if h, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " "); ok && strings.HasPrefix(line, "#") {
			a := drop.ReplaceAllString(strings.ToLower(strings.TrimSpace(h)), "")
			anchors[strings.ReplaceAll(a, " ", "-")] = true
		}
	}
	for _, m := range regexp.MustCompile(`id="([^"]+)"`).FindAllStringSubmatch(doc, -1) {
		anchors[m[1]] = true
	}
	return anchors
}

// dashboard is what the tests read of the dashboard model.
type dashboard struct {
	SchemaVersion int    `json:"schemaVersion"`
	UID           string `json:"uid"`
	Title         string `json:"title"`
	Panels        []panel
	Templating    struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource ref    `json:"datasource"`
	Targets    []struct {
		RefID      string `json:"refId"`
		Expr       string `json:"expr"`
		Datasource ref    `json:"datasource"`
	} `json:"targets"`
	// Panels are those of a collapsed row.
	Panels []panel `json:"panels"`
}

type variable struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	Datasource ref    `json:"datasource"`
	// Query is a string, or an object with a query string (Prometheus's
	// variable editor).
	Query      any    `json:"query"`
	Definition string `json:"definition"`
}

type ref struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&d); err != nil {
		t.Fatal(err)
	}
	// Collapsed rows hold their panels.
	var flat []panel
	for _, p := range d.Panels {
		flat = append(flat, p)
		flat = append(flat, p.Panels...)
	}
	d.Panels = flat
	return d
}

// labelValuesRE reads a Prometheus variable query label_values(selector, label).
var labelValuesRE = regexp.MustCompile(`^\s*label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)

// grafanaVarRE matches Grafana's variables in a query: $name, ${name},
// ${name:format}, [[name]].
var grafanaVarRE = regexp.MustCompile(`\$\{[a-zA-Z0-9_]+(?::[a-zA-Z]+)?\}|\$[a-zA-Z0-9_]+|\[\[[a-zA-Z0-9_]+\]\]`)

type located struct {
	where, expr string
}

// dashboardExprs returns every PromQL expression of the dashboard, the
// variables' selectors included, with Grafana's variables replaced by
// values PromQL accepts: a duration for the interval ones, a string
// elsewhere (they only ever appear in label matchers).
func dashboardExprs(t *testing.T, d dashboard) []located {
	t.Helper()
	subst := func(s string) string {
		return grafanaVarRE.ReplaceAllStringFunc(s, func(v string) string {
			switch strings.Trim(v, "${}[]") {
			case "__rate_interval", "__interval", "__range":
				return "5m"
			}
			return "x"
		})
	}
	var out []located
	for _, p := range d.Panels {
		for _, q := range p.Targets {
			if strings.TrimSpace(q.Expr) == "" {
				t.Errorf("panel %q query %s has no expr", p.Title, q.RefID)
				continue
			}
			out = append(out, located{fmt.Sprintf("panel %q query %s", p.Title, q.RefID), subst(q.Expr)})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(string)
		if m, ok := v.Query.(map[string]any); ok {
			q, _ = m["query"].(string)
		}
		if q != v.Definition {
			t.Errorf("variable %s: query %q and definition %q differ", v.Name, q, v.Definition)
		}
		m := labelValuesRE.FindStringSubmatch(q)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(selector, label)", v.Name, q)
			continue
		}
		out = append(out, located{"variable " + v.Name, subst(m[1])})
	}
	return out
}

// metricNameRE is a metric name in the classic character set.
var metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

// metricNames returns the metric names expr selects, sorted: each
// selector's name, or the names of its __name__ matcher, which must be an
// equality or an alternation of names (a looser regexp could not be
// checked).
func metricNames(expr parser.Expr) ([]string, error) {
	set := map[string]bool{}
	var err error
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		if vs.Name != "" {
			set[vs.Name] = true
			return nil
		}
		for _, m := range vs.LabelMatchers {
			if m.Name != model.MetricNameLabel {
				continue
			}
			switch m.Type {
			case labels.MatchEqual, labels.MatchRegexp:
				for _, name := range strings.Split(m.Value, "|") {
					if !metricNameRE.MatchString(name) {
						err = fmt.Errorf("selector %s: %q is no metric name: name the metrics one by one", vs, name)
						return err
					}
					set[name] = true
				}
			default:
				err = fmt.Errorf("selector %s: a negative __name__ matcher cannot be checked", vs)
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// wantSeries returns, for each selector of expr with equality matchers
// on labels other than job and instance, the metric name and those
// matchers: a series with those labels must exist before anything
// happened (a counter exported at 0), or a rate of it has nothing to
// start from. Regexp matchers (a 5xx code) select label values that may
// well not exist yet, and are left out.
func wantSeries(expr parser.Expr) []selector {
	var out []selector
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok || vs.Name == "" {
			return nil
		}
		sel := selector{name: vs.Name, labels: map[string]string{}}
		for _, m := range vs.LabelMatchers {
			switch {
			case m.Type != labels.MatchEqual, m.Name == model.MetricNameLabel, m.Name == "job", m.Name == "instance":
				continue
			}
			sel.labels[m.Name] = m.Value
		}
		if len(sel.labels) > 0 {
			out = append(out, sel)
		}
		return nil
	})
	return out
}

// selector is a metric name and the label values one of its series must
// have.
type selector struct {
	name   string
	labels map[string]string
}

func (s selector) String() string {
	var ls []string
	for k, v := range s.labels {
		ls = append(ls, fmt.Sprintf("%s=%q", k, v))
	}
	sort.Strings(ls)
	return s.name + "{" + strings.Join(ls, ", ") + "}"
}

// matchedBy reports whether one of the families' series has s's labels.
// A histogram's _bucket, _sum and _count series have its labels, and a
// summary's quantiles count as its quantile label.
func (s selector) matchedBy(families map[string]*dto.MetricFamily) bool {
	mf, ok := families[s.name]
	if !ok {
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, cut := strings.CutSuffix(s.name, suffix); cut && families[base] != nil {
				mf = families[base]
			}
		}
		if mf == nil || (mf.GetType() != dto.MetricType_HISTOGRAM && mf.GetType() != dto.MetricType_SUMMARY) {
			return false
		}
	}
	for _, m := range mf.GetMetric() {
		have := map[string][]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = append(have[l.GetName()], l.GetValue())
		}
		if mf.GetName() == s.name {
			for _, q := range m.GetSummary().GetQuantile() {
				have["quantile"] = append(have["quantile"], strconv.FormatFloat(q.GetQuantile(), 'g', -1, 64))
			}
		}
		all := true
		for k, v := range s.labels {
			all = all && slices.Contains(have[k], v)
		}
		if all {
			return true
		}
	}
	return false
}

// exportedNames returns the series names of an exposition's families: a
// histogram's _bucket, _sum and _count besides its name, a summary's _sum
// and _count.
func exportedNames(families map[string]*dto.MetricFamily) map[string]bool {
	names := map[string]bool{}
	for name, mf := range families {
		names[name] = true
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			names[name+"_bucket"], names[name+"_sum"], names[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			names[name+"_sum"], names[name+"_count"] = true, true
		}
	}
	return names
}

// scrape reads a /metrics page in the text format.
func scrape(ctx context.Context, t *testing.T, client *http.Client, url string) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, b)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if len(families) == 0 {
		t.Fatalf("GET %s: no metric", url)
	}
	return families
}

// startServe builds pictor from this checkout and starts `pictor serve`
// on a fresh data directory, its blobs in a bucket of a real
// S3-compatible server; it is stopped at the end of the test.
func startServe(t *testing.T) *pictor.Server {
	t.Helper()
	bin, err := pictor.Build()
	if err != nil {
		t.Fatal(err)
	}
	s3 := s3test.New(t)
	// The S3 store takes its credentials from the AWS SDK's usual chain.
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretAccessKey)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	blobs := "s3://" + s3.Bucket + "/blobs?endpoint=" + s3.URL + "&region=" + s3test.Region + "&path_style=true"
	log := &apitest.Buffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := pictor.Start(ctx, bin, []string{"--blobs", blobs, "--render-tabs", "1"}, log, 90*time.Second)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			t.Errorf("%v", err)
		}
		if t.Failed() {
			t.Logf("pictor serve's log:\n%s", log.String())
		}
	})
	return srv
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := pictor.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}
