package sharedmetric

import (
	"maps"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// buildAll builds one collector of each kind the factory makes and counts
// once on each.
func buildAll(f *Factory) {
	f.NewCounter(prometheus.CounterOpts{Name: "pictor_test_counter_total", Help: "counter"}).Inc()
	f.NewCounterVec(prometheus.CounterOpts{Name: "pictor_test_vec_total", Help: "vec"}, []string{"x"}).WithLabelValues("a").Inc()
	f.NewGauge(prometheus.GaugeOpts{Name: "pictor_test_gauge", Help: "gauge"}).Inc()
	f.NewHistogram(prometheus.HistogramOpts{Name: "pictor_test_seconds", Help: "histogram", Buckets: []float64{1}}).Observe(0.5)
	f.NewHistogramVec(prometheus.HistogramOpts{Name: "pictor_test_vec_seconds", Help: "histogram vec", Buckets: []float64{1}}, []string{"x"}).WithLabelValues("a").Observe(0.5)
}

// gather is the value of every series r exports by metric name: a
// counter's or gauge's value, a histogram's count.
func gather(t *testing.T, r prometheus.Gatherer) map[string]float64 {
	t.Helper()
	families, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			got[mf.GetName()] += value(m)
		}
	}
	return got
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

func TestFactory(t *testing.T) {
	tests := []struct {
		name string
		// instances is how many components build the collectors on one registry.
		instances int
	}{
		{name: "registers", instances: 1},
		{name: "reuses identical collectors", instances: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := prometheus.NewPedanticRegistry()
			for i := range tt.instances {
				f := With(r)
				buildAll(f)
				if err := f.Err(); err != nil {
					t.Fatalf("instance %d: %v", i, err)
				}
			}
			got := gather(t, r)
			want := []string{"pictor_test_counter_total", "pictor_test_gauge", "pictor_test_seconds", "pictor_test_vec_seconds", "pictor_test_vec_total"}
			if names := slices.Sorted(maps.Keys(got)); !slices.Equal(names, want) {
				t.Fatalf("exported %v, want %v", names, want)
			}
			// Every instance counted on the registered collectors.
			for name, v := range got {
				if v != float64(tt.instances) {
					t.Errorf("%s = %v, want %d", name, v, tt.instances)
				}
			}
		})
	}
}

func TestFactoryConflict(t *testing.T) {
	r := prometheus.NewRegistry()
	opts := prometheus.CounterOpts{Name: "pictor_test_total", Help: "test"}
	r.MustRegister(prometheus.NewCounter(opts))
	f := With(r)
	// The same name with labels is a conflict, not a share.
	vec := f.NewCounterVec(opts, []string{"x"})
	if f.Err() == nil {
		t.Fatal("a conflicting collector registered")
	}
	// After the first error the factory registers nothing, even what
	// would have registered, and keeps that error.
	first := f.Err()
	gauge := f.NewGauge(prometheus.GaugeOpts{Name: "pictor_test_after", Help: "after"})
	if f.Err() != first {
		t.Fatalf("Err = %v, want the first error %v", f.Err(), first)
	}
	// The collectors exist all the same.
	vec.WithLabelValues("a").Inc()
	gauge.Inc()
	if got := gather(t, r); len(got) != 1 || got["pictor_test_total"] != 0 {
		t.Fatalf("registry exports %v, want only the first counter at 0", got)
	}
}

func TestFactoryWithoutRegisterer(t *testing.T) {
	f := With(nil)
	c := f.NewCounterVec(prometheus.CounterOpts{Name: "pictor_test_total", Help: "test"}, []string{"x"})
	c.WithLabelValues("a").Add(2)
	// Without a registry nothing conflicts: another type under the same
	// name is no error.
	f.NewGauge(prometheus.GaugeOpts{Name: "pictor_test_total", Help: "test"})
	if err := f.Err(); err != nil {
		t.Fatalf("Err = %v without a registerer", err)
	}
	// The collector counts.
	r := prometheus.NewRegistry()
	r.MustRegister(c)
	if got := gather(t, r)["pictor_test_total"]; got != 2 {
		t.Fatalf("counter = %v, want 2", got)
	}
}
