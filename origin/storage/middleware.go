package storage

import (
	"context"
	"fmt"
	"mime"
	"strings"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// addAnswerCheck makes every S3 answer that no S3 API gives an error
// (*notS3Answer) before the SDK reads it: a 3xx or 4xx answer with a body
// that is not XML (an HTML or JSON page), and a successful PutObject or
// UploadPart without an ETag. 5xx answers are left to the retryer: a
// proxy's error page in front of a real S3 is worth another attempt.
func addAnswerCheck(st *middleware.Stack) error {
	return st.Deserialize.Insert(middleware.DeserializeMiddlewareFunc("PictorAnswerCheck",
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleDeserialize(ctx, in)
			if err != nil {
				return out, md, err
			}
			if resp, ok := out.RawResponse.(*smithyhttp.Response); ok && resp != nil {
				if a := checkAnswer(awsmiddleware.GetOperationName(ctx), resp); a != nil {
					return out, md, a
				}
			}
			return out, md, nil
		}), "OperationDeserializer", middleware.After)
}

func checkAnswer(operation string, resp *smithyhttp.Response) *notS3Answer {
	status := resp.StatusCode
	ct := resp.Header.Get("Content-Type")
	switch {
	case status >= 500:
		return nil
	case status >= 300:
		if resp.ContentLength != 0 && ct != "" && !isXML(ct) {
			return &notS3Answer{status: status, contentType: ct}
		}
	case status >= 200:
		// Cloud Storage answers a successful PUT with text/html and no
		// body: the type of an empty success says nothing.
		if (operation == "PutObject" || operation == "UploadPart") && resp.Header.Get("ETag") == "" {
			return &notS3Answer{status: status, contentType: ct, missingETag: true}
		}
	}
	return nil
}

func isXML(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/xml" || mt == "text/xml" || strings.HasSuffix(mt, "+xml")
}

// addAttemptMetrics counts every HTTP attempt (the retryer's included) of
// service's operations.
func addAttemptMetrics(m *metrics, provider Provider, service string) func(*middleware.Stack) error {
	return func(st *middleware.Stack) error {
		return st.Finalize.Insert(middleware.FinalizeMiddlewareFunc("PictorAttemptMetrics",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleFinalize(ctx, in)
				status := "error"
				if resp, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok && resp != nil {
					status = fmt.Sprintf("%dxx", resp.StatusCode/100)
				}
				m.attempts.WithLabelValues(string(provider), service, awsmiddleware.GetOperationName(ctx), status).Inc()
				return out, md, err
			}), "Retry", middleware.After)
	}
}
