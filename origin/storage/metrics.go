package storage

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	writes     *prometheus.CounterVec
	writeBytes *prometheus.CounterVec
	writeTime  *prometheus.HistogramVec
	tests      *prometheus.CounterVec
	attempts   *prometheus.CounterVec
}

func newMetrics(r prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pictor_storage_writes_total",
			Help: "Writes to storage destinations, by provider and result (ok or the failure's kind).",
		}, []string{"provider", "result"}),
		writeBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pictor_storage_write_bytes_total",
			Help: "Bytes written to storage destinations by successful writes, by provider.",
		}, []string{"provider"}),
		writeTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "pictor_storage_write_duration_seconds",
			Help:    "Time of a write to a storage destination, every attempt included, by provider.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 12),
		}, []string{"provider"}),
		tests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pictor_storage_connection_tests_total",
			Help: "Connection tests of storage destinations, by provider and result (ok or the failure's kind).",
		}, []string{"provider", "result"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pictor_storage_request_attempts_total",
			Help: "HTTP attempts of S3 and STS requests (retries included), by provider, service, operation and status class (2xx, 4xx, 5xx, error).",
		}, []string{"provider", "service", "operation", "status"}),
	}
	if r == nil {
		return m, nil
	}
	var err error
	if m.writes, err = register(r, m.writes); err != nil {
		return nil, err
	}
	if m.writeBytes, err = register(r, m.writeBytes); err != nil {
		return nil, err
	}
	if m.writeTime, err = register(r, m.writeTime); err != nil {
		return nil, err
	}
	if m.tests, err = register(r, m.tests); err != nil {
		return nil, err
	}
	if m.attempts, err = register(r, m.attempts); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, or returns the collector already registered under
// its name so that several connectors can share a registry.
func register[C prometheus.Collector](r prometheus.Registerer, c C) (C, error) {
	err := r.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("register storage metrics: %w", err)
}
