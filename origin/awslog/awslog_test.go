package awslog

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/smithy-go/logging"
)

type ctxKey struct{}

// ctxHandler records the context value each record was logged with.
type ctxHandler struct {
	slog.Handler
	seen *[]any
}

func (h ctxHandler) Handle(ctx context.Context, r slog.Record) error {
	*h.seen = append(*h.seen, ctx.Value(ctxKey{}))
	return h.Handler.Handle(ctx, r)
}

func TestLogger(t *testing.T) {
	var buf bytes.Buffer
	var seen []any
	l := slog.New(ctxHandler{slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}), &seen})
	lg := New(l, "blob s3 sdk")
	lg.Logf(logging.Debug, "retrying request %s, attempt %d", "PutObject", 2)
	ctx := context.WithValue(context.Background(), ctxKey{}, "req-7")
	lg.(logging.ContextLogger).WithContext(ctx).Logf(logging.Warn, "throttled")
	out := buf.String()
	for _, want := range []string{`msg="blob s3 sdk"`, "classification=DEBUG", `message="retrying request PutObject, attempt 2"`, "classification=WARN", "message=throttled"} {
		if !strings.Contains(out, want) {
			t.Fatalf("log %q lacks %q", out, want)
		}
	}
	if len(seen) != 2 || seen[0] != nil || seen[1] != "req-7" {
		t.Fatalf("contexts %v: WithContext's context must reach the handler", seen)
	}
}
