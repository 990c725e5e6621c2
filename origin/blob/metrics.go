package blob

import (
	"context"
	"errors"
	"fmt"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pictorhq/pictor/origin/sharedmetric"
)

// metrics of the S3 store. Collectors exist without a registerer, so
// that counting needs no nil checks.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	attempts *prometheus.CounterVec
	streams  *prometheus.CounterVec
	corrupt  prometheus.Counter
}

func newMetrics(r prometheus.Registerer) (*metrics, error) {
	f := sharedmetric.With(r)
	m := &metrics{
		requests: f.NewCounterVec(prometheus.CounterOpts{
			Name: "pictor_blob_s3_requests_total",
			Help: "S3 requests of the blob store, retries included, by operation (GetObject, HeadObject, PutObject, ListObjectsV2, DeleteObject) and result (ok, not_found, changed, corrupt, unavailable, canceled, error).",
		}, []string{"operation", "result"}),
		duration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "pictor_blob_s3_request_duration_seconds",
			Help:    "Time of an S3 request of the blob store, every attempt included, by operation: until the answer's headers for the GETs of an open object, the whole body for the others.",
			Buckets: prometheus.ExponentialBuckets(0.002, 2.5, 12),
		}, []string{"operation"}),
		attempts: f.NewCounterVec(prometheus.CounterOpts{
			Name: "pictor_blob_s3_request_attempts_total",
			Help: "HTTP attempts of the blob store's S3 requests, by operation and status class (2xx, 3xx, 4xx, 5xx, error).",
		}, []string{"operation", "status"}),
		streams: f.NewCounterVec(prometheus.CounterOpts{
			Name: "pictor_blob_s3_stream_failures_total",
			Help: "Reads of an open S3 object that failed after its GET was answered, by result (unavailable, canceled, error).",
		}, []string{"result"}),
		corrupt: f.NewCounter(prometheus.CounterOpts{
			Name: "pictor_blob_checksum_failures_total",
			Help: "Blobs whose content did not match the SHA-256 recorded when they were written, or had none recorded.",
		}),
	}
	// Every operation and result is exported at 0 from the start, so that
	// a rate of failures (an alert on an unreachable S3) works before the
	// first one.
	for _, op := range []string{"GetObject", "HeadObject", "PutObject", "ListObjectsV2", "DeleteObject"} {
		for _, res := range []string{"ok", "not_found", "changed", "corrupt", "unavailable", "canceled", "error"} {
			m.requests.WithLabelValues(op, res)
		}
	}
	return m, f.Err()
}

// observe counts a request of operation that started at start.
func (m *metrics) observe(operation string, start time.Time, err error) {
	m.duration.WithLabelValues(operation).Observe(time.Since(start).Seconds())
	m.requests.WithLabelValues(operation, result(err)).Inc()
}

// result is err's metric label.
func result(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrNotFound):
		return "not_found"
	case errors.Is(err, ErrChanged):
		return "changed"
	case errors.Is(err, ErrCorrupt):
		return "corrupt"
	case errors.Is(err, ErrUnavailable):
		return "unavailable"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	}
	return "error"
}

// countAttempts counts every HTTP attempt, the retryer's included.
func (m *metrics) countAttempts(st *middleware.Stack) error {
	return st.Finalize.Insert(middleware.FinalizeMiddlewareFunc("PictorBlobAttempts",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleFinalize(ctx, in)
			status := "error"
			if resp, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok && resp != nil {
				status = fmt.Sprintf("%dxx", resp.StatusCode/100)
			}
			m.attempts.WithLabelValues(awsmiddleware.GetOperationName(ctx), status).Inc()
			return out, md, err
		}), "Retry", middleware.After)
}
