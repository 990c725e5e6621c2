package render

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestOutcomesExported: every outcome a render can be counted under is
// exported at 0 before the first render, so that a rate or an alert on
// one of them works from the start.
func TestOutcomesExported(t *testing.T) {
	reg := prometheus.NewRegistry()
	newMetrics(reg)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, mf := range mfs {
		if mf.GetName() != "pictor_render_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" {
					exported[l.GetValue()] = true
				}
			}
		}
	}
	tests := []struct {
		name string
		err  error
	}{
		{"ok", nil},
		{"canceled", fmt.Errorf("wait for a tab: %w", context.Canceled)},
		{"deadline", context.DeadlineExceeded},
		{"stopped", ErrStopped},
		{"timeout", ErrTimeout},
		{"unreachable", ErrUnreachable},
		{"blocked", ErrBlockedURL},
		{"browser", ErrBrowser},
		{"crashed", ErrCrashed},
		{"input", errors.New("bad input")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if o := outcome(tt.err); !exported[o] {
				t.Errorf("outcome %q is not exported before a render (exported: %v)", o, exported)
			}
		})
	}
	for _, o := range []string{"queue_full", "org_queue_full"} {
		if !exported[o] {
			t.Errorf("refusal outcome %q is not exported before a render", o)
		}
	}
}
