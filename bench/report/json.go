package report

import (
	"encoding/json"
	"time"
)

// jsonReport is report.json: the report's figures for programs (a run
// compared with an earlier one), times in milliseconds or seconds.
type jsonReport struct {
	Started   time.Time    `json:"started"`
	Host      string       `json:"host"`
	CPUs      int          `json:"cpus"`
	LoadAvg   float64      `json:"load_avg"`
	Pictor    string       `json:"pictor"`
	Chromium  string       `json:"chromium"`
	DurationS float64      `json:"duration_s"`
	PoolSize  int          `json:"pool_size"`
	Results   []jsonResult `json:"results"`
	Checks    []jsonCheck  `json:"checks"`
	Failures  []string     `json:"failures"`
	Scenarios []jsonAbout  `json:"scenarios"`
}

type jsonAbout struct {
	Name  string `json:"name"`
	About string `json:"about"`
}

type jsonResult struct {
	Name       string  `json:"name"`
	Clients    int     `json:"clients"`
	Unit       string  `json:"unit"`
	Requests   int     `json:"requests"`
	Errors     int     `json:"errors"`
	FirstError string  `json:"first_error,omitempty"`
	ElapsedS   float64 `json:"elapsed_s"`
	// Rate is successful requests per second.
	Rate float64 `json:"rate"`
	// Latencies of successful requests; absent without any.
	P50Ms  *float64 `json:"p50_ms,omitempty"`
	P95Ms  *float64 `json:"p95_ms,omitempty"`
	P99Ms  *float64 `json:"p99_ms,omitempty"`
	MeanMs *float64 `json:"mean_ms,omitempty"`
	// CPUPerRequestMs is the system under test's; absent when unknown.
	CPUPerRequestMs *float64  `json:"cpu_per_request_ms,omitempty"`
	Rounds          []float64 `json:"rounds,omitempty"`
	Note            string    `json:"note,omitempty"`
}

type jsonCheck struct {
	Name     string `json:"name"`
	Measured string `json:"measured"`
	Pass     bool   `json:"pass"`
}

// ms returns d in milliseconds, for an optional field.
func ms(d time.Duration) *float64 {
	v := float64(d) / float64(time.Millisecond)
	return &v
}

// JSON renders the report as report.json.
func (r *Report) JSON() ([]byte, error) {
	out := jsonReport{Started: r.Meta.Started, Host: r.Meta.Host, CPUs: r.Meta.CPUs, LoadAvg: r.Meta.LoadAvg,
		Pictor: r.Meta.Pictor, Chromium: r.Meta.Chromium, DurationS: r.Meta.Duration.Seconds(), PoolSize: r.Meta.PoolSize,
		Results: []jsonResult{}, Checks: []jsonCheck{}, Failures: append([]string{}, r.Failures...), Scenarios: []jsonAbout{}}
	for _, s := range r.Meta.Scenarios {
		out.Scenarios = append(out.Scenarios, jsonAbout(s))
	}
	for _, res := range r.Results {
		j := jsonResult{Name: res.Name, Clients: res.Clients, Unit: res.Unit, Requests: res.Requests, Errors: res.Errors,
			FirstError: res.FirstError, ElapsedS: res.Elapsed.Seconds(), Rate: res.Rate(), Rounds: res.Rounds, Note: res.Note}
		if res.Latency.Count() > 0 {
			j.P50Ms, j.P95Ms, j.P99Ms, j.MeanMs = ms(res.Latency.Quantile(0.50)), ms(res.Latency.Quantile(0.95)),
				ms(res.Latency.Quantile(0.99)), ms(res.Latency.Mean())
		}
		if res.CPU > 0 && res.Requests > res.Errors {
			j.CPUPerRequestMs = ms(res.CPUPerRequest())
		}
		out.Results = append(out.Results, j)
	}
	for _, c := range r.Checks {
		out.Checks = append(out.Checks, jsonCheck(c))
	}
	return json.MarshalIndent(out, "", "  ")
}
