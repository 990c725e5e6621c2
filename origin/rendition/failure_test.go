package rendition

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/render"
	"github.com/pictorhq/pictor/origin/usage"
)

// TestRenderFailures: each render error becomes its status and message; a
// permanent one is recorded (the master's on the image, a PDF's apart) and
// answered on every later Open without rendering again, a transient one
// is not; only a master that had no page at all (unreachable or blocked
// site) gives its credits back, exactly once however often it fails.
func TestRenderFailures(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		pdf        bool
		status     int
		message    string
		recorded   bool
		refund     bool
		retryAfter string
	}{
		{name: "unreachable site", err: render.ErrUnreachable, status: 502, message: "Render failed: ", recorded: true, refund: true},
		{name: "blocked URL", err: render.ErrBlockedURL, status: 400, message: "Render failed: ", recorded: true, refund: true},
		{name: "selector not found", err: render.ErrSelectorNotFound, status: 400, message: "Render failed: ", recorded: true},
		{name: "page never ready", err: render.ErrNotReady, status: 400, message: "Render failed: ", recorded: true},
		{name: "output too large", err: render.ErrTooLarge, status: 400, message: "Render failed: ", recorded: true},
		{name: "timeout", err: render.ErrTimeout, status: 504, message: "the page did not finish in time", recorded: true},
		{name: "queue full", err: render.ErrQueueFull, status: 503, message: "busy", retryAfter: "2"},
		{name: "page crashed", err: render.ErrCrashed, status: 502, message: "Render failed: "},
		{name: "caller gone", err: context.DeadlineExceeded, status: 504, message: "did not finish in time"},
		{name: "engine stopped", err: render.ErrStopped, status: 500, message: "Render failed"},
		{name: "unreachable site, PDF", err: render.ErrUnreachable, pdf: true, status: 502, message: "Render failed: ", recorded: true},
		{name: "selector not found, PDF", err: render.ErrSelectorNotFound, pdf: true, status: 400, message: "Render failed: ", recorded: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			o := e.newOrg("pro")
			// Two other images, so that a second refund would show.
			created, _, err := e.svc.Create(context.Background(), o, []Item{{Params: html("a")}, {Params: html("b")}, {Params: html("c")}})
			if err != nil {
				t.Fatal(err)
			}
			img := created[0].Image
			// The background renders of the three end first (the stopped
			// engine fails them, unrecorded): one still running would be
			// what Open below joins, instead of reading the record.
			e.svc.prerenders.Wait()
			cause := fmt.Errorf("render %s: %w", img.ID, tt.err)
			wantUsed := int64(3)
			if tt.refund {
				wantUsed = 2
			}
			for attempt := range 2 {
				got := e.svc.Fail(img, cause, tt.pdf)
				var ae *apierr.Error
				if !errors.As(got, &ae) || ae.Status != tt.status || !strings.Contains(ae.Message, tt.message) {
					t.Fatalf("attempt %d: fail = %v, want %d with %q", attempt, got, tt.status, tt.message)
				}
				if !errors.Is(got, tt.err) {
					t.Fatalf("attempt %d: the cause is not kept for the log: %v", attempt, got)
				}
				if ra := ae.Header.Get("Retry-After"); ra != tt.retryAfter {
					t.Fatalf("attempt %d: Retry-After %q, want %q", attempt, ra, tt.retryAfter)
				}
				if used := e.used(t.Context(), o); used != wantUsed {
					t.Fatalf("attempt %d: %d credits used, want %d", attempt, used, wantUsed)
				}
			}

			rec := e.get(t.Context(), img.ID)
			failure, format := rec.Failure, imageparams.FormatPNG
			if tt.pdf {
				failure, format = rec.PDFFailure, imageparams.FormatPDF
				if rec.Failure != nil || rec.State != StatePending {
					t.Fatalf("a PDF failure touched the master: %+v", rec)
				}
			} else if (rec.State == StateFailed) != tt.recorded {
				t.Fatalf("state %s, recorded = %v", rec.State, tt.recorded)
			}
			if !tt.recorded {
				if failure != nil {
					t.Fatalf("a transient failure was recorded: %+v", failure)
				}
				return
			}
			if failure == nil || failure.Status != tt.status || !strings.Contains(failure.Message, tt.message) {
				t.Fatalf("recorded failure %+v", failure)
			}
			// Open answers the record; it does not render (the stopped
			// engine would answer 500).
			_, err = e.svc.Open(context.Background(), img.ID, format)
			var ae *apierr.Error
			if !errors.As(err, &ae) || ae.Status != failure.Status || ae.Message != failure.Message {
				t.Fatalf("Open after the failure: %v, want the recorded %+v", err, failure)
			}
		})
	}
}

// TestRefundExactlyOnceUnderLoad: many renders of one image failing at
// once refund it once, and refunds racing with creations of the same
// organization lose no update of its counters.
func TestRefundExactlyOnceUnderLoad(t *testing.T) {
	e := newEnv(t)
	o := e.newOrg("pro")
	created, _, err := e.svc.Create(context.Background(), o, []Item{{Params: html("x")}, {Params: html("y")}})
	if err != nil {
		t.Fatal(err)
	}
	failing := created[0].Image
	const workers, creations = 8, 10
	unreachable := fmt.Errorf("navigate: %w", render.ErrUnreachable)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			e.svc.Fail(failing, unreachable, false)
		})
		wg.Go(func() {
			for i := range creations {
				p := html(fmt.Sprintf("worker %d image %d", w, i))
				created, _, err := e.svc.Create(context.Background(), o, []Item{{Params: p}})
				if err != nil {
					t.Error(err)
					return
				}
				if i%2 == 0 {
					e.svc.Fail(created[0].Image, unreachable, false) // refunds it
				}
			}
		})
	}
	wg.Wait()
	want := int64(2 - 1 + workers*creations/2)
	if used := e.used(t.Context(), o); used != want {
		t.Fatalf("%d credits used, want %d", used, want)
	}
}

// TestRefundGoesToTheChargedPeriod: a master that fails in the next
// billing period gives its credits back to the period it was charged in.
func TestRefundGoesToTheChargedPeriod(t *testing.T) {
	e := newEnv(t)
	o := e.newOrg("pro")
	charged := e.clock.Now()
	created, _, err := e.svc.Create(context.Background(), o, []Item{{Params: html("x")}, {Params: html("y")}})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(40 * 24 * time.Hour) // the next billing period
	e.create(o, Item{Params: html("z")})
	e.svc.Fail(created[0].Image, render.ErrUnreachable, false)
	then, err := usage.Used(t.Context(), e.store, o, charged)
	if err != nil {
		t.Fatal(err)
	}
	if then != 1 || e.used(t.Context(), o) != 1 {
		t.Fatalf("after the refund: %d used in the charged period, %d in this one; want 1 and 1", then, e.used(t.Context(), o))
	}
}

// TestFileOfDeletedImageIsRemoved: a render or conversion that finishes
// after its image was deleted leaves no file behind.
func TestFileOfDeletedImageIsRemoved(t *testing.T) {
	e := newEnv(t)
	o := e.newOrg("pro")
	img := e.create(o, Item{Params: html("x")})
	if n, err := e.svc.Delete(context.Background(), o.ID, []string{img.ID}); n != 1 || err != nil {
		t.Fatalf("delete: %d, %v", n, err)
	}
	if _, err := e.svc.Keep(context.Background(), img.ID, imageparams.FormatPNG, testPNG(t, 4, 4, 0), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("keep after delete: %v", err)
	}
	if _, err := e.blobs.Read(context.Background(), img.ID, fileNames[imageparams.FormatPNG]); err == nil {
		t.Fatal("the file of a deleted image was left")
	}
	if err := e.svc.failMaster(img.ID, &Failure{Status: 502, Message: "x"}, true); !errors.Is(err, ErrNotFound) {
		t.Fatalf("failMaster after delete: %v", err)
	}
	if _, err := e.svc.Get(t.Context(), img.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a failure recorded after delete brought the image back: %v", err)
	}
}
