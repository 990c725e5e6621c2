package sharedmetric

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestRegister(t *testing.T) {
	r := prometheus.NewRegistry()
	opts := prometheus.CounterOpts{Name: "pictor_test_total", Help: "test"}
	first, err := Register(r, prometheus.NewCounter(opts))
	if err != nil {
		t.Fatal(err)
	}
	second, err := Register(r, prometheus.NewCounter(opts))
	if err != nil {
		t.Fatalf("second registration: %v", err)
	}
	second.Inc()
	if first != second {
		t.Fatal("the second registration did not return the first collector")
	}
	// The same name with other labels is a conflict, not a share.
	if _, err := Register(r, prometheus.NewCounterVec(opts, []string{"x"})); err == nil {
		t.Fatal("a conflicting collector registered")
	}
	// The same name as a gauge: another type, an error.
	if _, err := Register(r, prometheus.NewGauge(prometheus.GaugeOpts{Name: "pictor_test_total", Help: "test"})); err == nil {
		t.Fatal("a gauge took a counter's name")
	}
}
