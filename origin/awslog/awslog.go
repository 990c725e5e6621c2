package awslog

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/smithy-go/logging"
)

// New returns an SDK logger writing each line to l at debug level, as
// message msg with the SDK's classification and text.
func New(l *slog.Logger, msg string) logging.Logger { return logger{l: l, msg: msg} }

type logger struct {
	l   *slog.Logger
	msg string
	ctx context.Context
}

func (s logger) Logf(c logging.Classification, format string, v ...any) {
	ctx := s.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	s.l.DebugContext(ctx, s.msg, "classification", string(c), "message", fmt.Sprintf(format, v...))
}

func (s logger) WithContext(ctx context.Context) logging.Logger {
	return logger{l: s.l, msg: s.msg, ctx: ctx}
}

var (
	_ logging.Logger        = logger{}
	_ logging.ContextLogger = logger{}
)
