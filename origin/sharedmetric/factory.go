package sharedmetric

import "github.com/prometheus/client_golang/prometheus"

// Factory builds collectors and registers each with Register, so that a
// constructor reads as the list of its metrics. Without a registerer it
// only builds them: counting needs no nil checks. It keeps the first
// error, returned by Err, and registers nothing after it.
type Factory struct {
	r   prometheus.Registerer
	err error
}

// With returns a Factory registering with r, which may be nil.
func With(r prometheus.Registerer) *Factory {
	return &Factory{r: r}
}

// Err is the first registration error, or nil.
func (f *Factory) Err() error {
	return f.err
}

// NewCounter builds and registers a counter.
func (f *Factory) NewCounter(opts prometheus.CounterOpts) prometheus.Counter {
	return register(f, prometheus.NewCounter(opts))
}

// NewCounterVec builds and registers a counter vector.
func (f *Factory) NewCounterVec(opts prometheus.CounterOpts, labels []string) *prometheus.CounterVec {
	return register(f, prometheus.NewCounterVec(opts, labels))
}

// NewGauge builds and registers a gauge.
func (f *Factory) NewGauge(opts prometheus.GaugeOpts) prometheus.Gauge {
	return register(f, prometheus.NewGauge(opts))
}

// NewHistogram builds and registers a histogram.
func (f *Factory) NewHistogram(opts prometheus.HistogramOpts) prometheus.Histogram {
	return register(f, prometheus.NewHistogram(opts))
}

// NewHistogramVec builds and registers a histogram vector.
func (f *Factory) NewHistogramVec(opts prometheus.HistogramOpts, labels []string) *prometheus.HistogramVec {
	return register(f, prometheus.NewHistogramVec(opts, labels))
}

// register registers c with f's registerer, unless there is none or an
// earlier registration failed, and returns the collector to count with.
func register[C prometheus.Collector](f *Factory, c C) C {
	if f.r == nil || f.err != nil {
		return c
	}
	shared, err := Register(f.r, c)
	if err != nil {
		f.err = err
	}
	return shared
}
