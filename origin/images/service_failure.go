package images

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/render"
	"github.com/pictorhq/pictor/origin/usage"
)

// fail records a render failure that will not change on retry, and turns
// every failure into its API error. An image whose site could not be
// reached, or was refused, never had a page to capture: its master's
// failure gives its credits back (see failMaster).
func (s *Service) fail(img *Image, err error, pdf bool) error {
	f, permanent := classify(err)
	if !permanent {
		return apierrFor(f, err)
	}
	var uerr error
	if pdf {
		_, uerr = s.update(img.ID, func(img *Image) { img.PDFFailure = f })
	} else {
		uerr = s.failMaster(img.ID, f, noPage(err))
	}
	if uerr != nil {
		return uerr
	}
	return apierrFor(f, err)
}

// failMaster records that the image's master failed for good. With refund,
// the image's credits are given back in the same batch as the record, under
// the organization's credit lock: the first failure of the master refunds
// exactly once (a failed master is never rendered again), and no charge
// sees the counters between the two.
func (s *Service) failMaster(id string, f *Failure, refund bool) error {
	unlock := s.lock(id)
	defer unlock()
	img, err := s.records.get(id)
	if errors.Is(err, ErrNotFound) {
		if rerr := s.cfg.Blobs.Remove(s.ctx, id); rerr != nil {
			return rerr
		}
	}
	if err != nil {
		return err
	}
	refund = refund && img.State != StateFailed && img.Credits > 0
	img.State, img.Failure = StateFailed, f
	if !refund {
		return s.records.put(img)
	}
	o, err := org.NewStore(s.cfg.Store, s.cfg.Now).Get(img.OrgID)
	if err != nil {
		return fmt.Errorf("refund image %s: %w", id, err)
	}
	raw, err := json.Marshal(img)
	if err != nil {
		return err
	}
	mu := s.orgLock(img.OrgID)
	mu.Lock()
	defer mu.Unlock()
	b := s.cfg.Store.NewBatch()
	defer b.Close()
	if err := b.Put(recordKey(id), raw); err != nil {
		return err
	}
	if err := usage.Refund(s.cfg.Store, b, o, img.CreatedAt, int64(img.Credits)); err != nil {
		return fmt.Errorf("refund image %s: %w", id, err)
	}
	if err := b.Commit(); err != nil {
		return fmt.Errorf("refund image %s: %w", id, err)
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
