package storage

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pictorhq/pictor/origin/sharedmetric"
)

type metrics struct {
	writes     *prometheus.CounterVec
	writeBytes *prometheus.CounterVec
	writeTime  *prometheus.HistogramVec
	tests      *prometheus.CounterVec
	attempts   *prometheus.CounterVec
}

func newMetrics(r prometheus.Registerer) (*metrics, error) {
	f := sharedmetric.With(r)
	m := &metrics{
		writes: f.NewCounterVec(prometheus.CounterOpts{
			Name: "pictor_storage_writes_total",
			Help: "Writes to storage destinations, by provider and result (ok or the failure's kind).",
		}, []string{"provider", "result"}),
		writeBytes: f.NewCounterVec(prometheus.CounterOpts{
			Name: "pictor_storage_write_bytes_total",
			Help: "Bytes written to storage destinations by successful writes, by provider.",
		}, []string{"provider"}),
		writeTime: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "pictor_storage_write_duration_seconds",
			Help:    "Time of a write to a storage destination, every attempt included, by provider.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 12),
		}, []string{"provider"}),
		tests: f.NewCounterVec(prometheus.CounterOpts{
			Name: "pictor_storage_connection_tests_total",
			Help: "Connection tests of storage destinations, by provider and result (ok or the failure's kind).",
		}, []string{"provider", "result"}),
		attempts: f.NewCounterVec(prometheus.CounterOpts{
			Name: "pictor_storage_request_attempts_total",
			Help: "HTTP attempts of S3 and STS requests (retries included), by provider, service, operation and status class (2xx, 4xx, 5xx, error).",
		}, []string{"provider", "service", "operation", "status"}),
	}
	return m, f.Err()
}
