package storage_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pictorhq/pictor/origin/storage"
)

func TestMetrics(t *testing.T) {
	ok := newStub(t, false, func(w http.ResponseWriter, r *http.Request) { w.Header().Set("ETag", `"x"`) })
	denied := newStub(t, false, func(w http.ResponseWriter, r *http.Request) { s3Error(w, http.StatusForbidden, "AccessDenied") })
	reg := prometheus.NewRegistry()
	var logs logBuffer
	cfg := testConfig(&logs)
	cfg.Registerer = reg
	c := newConnector(t, cfg)
	if _, err := storage.New(cfg); err != nil { // a second connector shares the registry
		t.Fatal(err)
	}
	if err := c.Test(context.Background(), stubConnection(ok.URL)); err != nil {
		t.Fatal(err)
	}
	_ = c.Test(context.Background(), stubConnection(denied.URL))
	w, err := c.Open(stubConnection(ok.URL))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Put(context.Background(), "k", strings.NewReader("abc"), 3, "text/plain"); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		`pictor_storage_connection_tests_total{provider="other_s3_compatible",result="access_denied"}`:                          1,
		`pictor_storage_connection_tests_total{provider="other_s3_compatible",result="ok"}`:                                     1,
		`pictor_storage_writes_total{provider="other_s3_compatible",result="ok"}`:                                               1,
		`pictor_storage_write_bytes_total{provider="other_s3_compatible"}`:                                                      3,
		`pictor_storage_request_attempts_total{operation="PutObject",provider="other_s3_compatible",service="s3",status="2xx"}`: 2,
		`pictor_storage_request_attempts_total{operation="PutObject",provider="other_s3_compatible",service="s3",status="4xx"}`: 1,
	}
	got := gather(t, reg)
	for series, v := range want {
		if got[series] != v {
			t.Errorf("%s = %v, want %v", series, got[series], v)
		}
	}
	if _, ok := got[`pictor_storage_write_duration_seconds_count{provider="other_s3_compatible"}`]; !ok {
		t.Errorf("no write duration: %v", got)
	}
}

// gather flattens reg's counters and histogram counts to name{labels}.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(labels)
			name := f.GetName()
			v := m.GetCounter().GetValue()
			if h := m.GetHistogram(); h != nil {
				name += "_count"
				v = float64(h.GetSampleCount())
			}
			out[name+"{"+strings.Join(labels, ",")+"}"] = v
		}
	}
	return out
}
