package rendition

import (
	"context"
	"errors"
	"fmt"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/render"
	"github.com/pictorhq/pictor/origin/usage"
)

// Fail records a render failure that will not change on retry, and turns
// every failure into its API error. An image whose site could not be
// reached, or was refused, never had a page to capture: its master's
// failure gives its credits back (see failMaster). A file that another
// origin made meanwhile (its render lease was taken over) is kept: the
// failure is then not recorded. Renders call it; it is exported for the
// handlers' tests, which record failures without a render.
func (s *Service) Fail(img *Image, err error, pdf bool) error {
	f, permanent := classify(err)
	if !permanent {
		return apierrFor(f, err)
	}
	var uerr error
	if pdf {
		_, uerr = s.update(img.ID, func(img *Image) {
			if _, ok := img.Renditions[string(imageparams.FormatPDF)]; !ok {
				img.PDFFailure = f
			}
		})
	} else {
		uerr = s.failMaster(img.ID, f, noPage(err))
	}
	if uerr != nil {
		return uerr
	}
	return apierrFor(f, err)
}

// failMaster records that the image's master failed for good. With refund,
// the first failure of the master (a failed master is never rendered
// again) owes the image's credits back (usage.Owe) in the transaction
// that records it, and the organization's credits are then settled under
// their own lock: exactly once, and no charge sees the failure recorded
// without its refund (a charge settles first).
func (s *Service) failMaster(id string, f *Failure, refund bool) error {
	var img *Image
	var owed bool
	err := s.updateRecord(id, func(ctx context.Context, txn kv.Txn) error {
		recs := records{txn}
		var err error
		if img, err = recs.get(ctx, id); err != nil {
			return err
		}
		if img.State == StateReady {
			return nil
		}
		owed = refund && img.State != StateFailed && img.Credits > 0
		img.State, img.Failure = StateFailed, f
		if err := recs.put(img); err != nil {
			return err
		}
		if owed {
			return usage.Owe(txn, img.OrgID, id, img.CreatedAt, int64(img.Credits))
		}
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		if rerr := s.cfg.Blobs.Remove(s.ctx, id); rerr != nil {
			return rerr
		}
	}
	if err != nil || !owed {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeWait)
	defer cancel()
	o, err := org.NewStore(s.cfg.Store, s.cfg.Now).Get(ctx, img.OrgID)
	if err != nil {
		return fmt.Errorf("refund image %s: %w", id, err)
	}
	if err := s.cfg.Store.Update(ctx, usage.Lock(o.ID), func(txn kv.Txn) error {
		_, err := usage.Settle(ctx, txn, o)
		return err
	}); err != nil {
		return fmt.Errorf("refund image %s (owed; the next charge settles it): %w", id, err)
	}
	return nil
}

// noPage reports a render that failed because its main document could not
// be loaded at all: there was no page, not a page that did not work.
func noPage(err error) bool {
	return errors.Is(err, render.ErrUnreachable) || errors.Is(err, render.ErrBlockedURL)
}

// classify maps a render error to the failure a GET answers, and whether it
// is permanent (recorded) or transient (tried again on the next GET).
func classify(err error) (*Failure, bool) {
	switch {
	case errors.Is(err, render.ErrSelectorNotFound), errors.Is(err, render.ErrInvalidSelector),
		errors.Is(err, render.ErrNotReady), errors.Is(err, render.ErrBlockedURL),
		errors.Is(err, render.ErrTooLarge), errors.Is(err, render.ErrEmpty), errors.Is(err, render.ErrPageMemory),
		errors.Is(err, render.ErrPageBusy):
		return &Failure{Status: 400, Message: "Render failed: " + err.Error()}, true
	case errors.Is(err, render.ErrCrashed):
		return &Failure{Status: 502, Message: "Render failed: " + err.Error()}, false
	case errors.Is(err, render.ErrUnreachable), errors.Is(err, render.ErrInvalidProxy):
		return &Failure{Status: 502, Message: "Render failed: " + err.Error()}, true
	case errors.Is(err, render.ErrTimeout):
		return &Failure{Status: 504, Message: "Render failed: the page did not finish in time"}, true
	case errors.Is(err, render.ErrQueueFull):
		return &Failure{Status: 503, Message: "All renderers are busy; try again shortly"}, false
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &Failure{Status: 504, Message: "Render did not finish in time"}, false
	}
	return &Failure{Status: 500, Message: "Render failed"}, false
}

func apierrFor(f *Failure, cause error) error {
	e := apierr.New(f.Status, "%s", f.Message)
	e.Cause = cause
	if f.Status == 503 {
		e.WithHeader("Retry-After", "2")
	}
	return e
}

func failureError(f *Failure) error {
	if f == nil {
		return apierr.New(500, "Render failed")
	}
	return apierr.New(f.Status, "%s", f.Message)
}
