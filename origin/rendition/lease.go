package rendition

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/imageparams"
)

// Render leases make each file of an image once across every origin
// sharing the store: the singleflight of await keeps one maker per
// process, the lease one per store. The origin that takes an image's
// lease for a format (in a transaction under the image's record lock,
// which also sees whether the file exists already) makes the file,
// renews the lease every third of its life while it works and deletes
// it when done. The others poll the record until it holds the file or
// its failure, or until the lease expired: its holder died, and they
// take it over. Lease times are the machines' real clocks, not
// Config.Now: a lease is about how long a process has been silent, and
// a test's clock standing still would make it immortal.

// DefaultRenderLease is Config.RenderLease's default.
const DefaultRenderLease = 30 * time.Second

// Poll interval bounds of a wait for another origin's render: a twentieth
// of the lease within them. The upper one keeps what a GET loses to the
// poll small next to a render (an edge sends a GET right after its
// creation to any origin, often not the one rendering it); a poll is two
// point reads.
const (
	minLeasePoll = 10 * time.Millisecond
	maxLeasePoll = 250 * time.Millisecond
)

// leaseKey holds the render lease of an image's file in format (see
// record.go's key layout).
func leaseKey(id string, format imageparams.Format) []byte {
	return []byte("img-lease/" + id + "/" + string(format))
}

// lease is a stored render lease.
type lease struct {
	// Holder is the instance id of the service making the file.
	Holder  string    `json:"holder"`
	Expires time.Time `json:"expires"`
}

// errLeaseLost: the lease of a file being made was taken over (its
// holder was silent past its expiry) or deleted with the image.
var errLeaseLost = errors.New("render lease lost")

func getLease(ctx context.Context, r kv.Reader, id string, format imageparams.Format) (*lease, error) {
	raw, err := r.Get(ctx, leaseKey(id, format))
	if errors.Is(err, kv.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get render lease of image %s: %w", id, err)
	}
	var l lease
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, fmt.Errorf("decode render lease of image %s: %w", id, err)
	}
	return &l, nil
}

func putLease(w kv.Writer, id string, format imageparams.Format, l lease) error {
	raw, err := json.Marshal(l)
	if err != nil {
		return err
	}
	return w.Put(leaseKey(id, format), raw)
}

// finished tells from an image's record whether its file in one format is
// made (true, nil), failed for good (true and the error a GET answers), or
// still to make (false).
type finished func(img *Image) (bool, error)

// leaseState is what a try to take a lease found.
type leaseState int

const (
	leaseDone leaseState = iota // the file exists or failed: nothing to make
	leaseMine                   // this service took the lease
	leaseBusy                   // another live service holds it
)

// takeLease reads the image's record and, unless done says the file is
// finished or another service holds a live lease, takes the lease, in one
// transaction. With leaseDone the error is done's.
func (s *Service) takeLease(ctx context.Context, id string, format imageparams.Format, done finished) (*Image, leaseState, error) {
	if !s.cfg.Shared {
		img, err := s.records.get(ctx, id)
		if err != nil {
			return nil, 0, err
		}
		if fin, err := done(img); fin {
			return img, leaseDone, err
		}
		return img, leaseMine, nil
	}
	var img *Image
	var state leaseState
	var doneErr error
	err := s.cfg.Store.Update(ctx, recordLock(id), func(txn kv.Txn) error {
		var err error
		if img, err = (records{txn}).get(ctx, id); err != nil {
			return err
		}
		var fin bool
		if fin, doneErr = done(img); fin {
			state = leaseDone
			return nil
		}
		l, err := getLease(ctx, txn, id, format)
		if err != nil {
			return err
		}
		now := time.Now()
		if l != nil && l.Holder != s.instance && now.Before(l.Expires) {
			state = leaseBusy
			return nil
		}
		state = leaseMine
		return putLease(txn, id, format, lease{Holder: s.instance, Expires: now.Add(s.cfg.RenderLease)})
	})
	if err != nil {
		return nil, 0, err
	}
	return img, state, doneErr
}

// leased makes the image's file in format unless done finds it finished:
// when this service takes the render lease it runs work, renewing the
// lease meanwhile and releasing it after; when another origin holds it,
// it waits for that origin's result, or for its lease to expire and then
// takes it over. work receives the record read with the lease and the
// held lease, which it confirms (held.confirm) right before storing what
// it made.
func (s *Service) leased(ctx context.Context, id string, format imageparams.Format, done finished,
	work func(ctx context.Context, img *Image, h *held) (*Image, error)) (*Image, error) {
	for {
		img, state, err := s.takeLease(ctx, id, format, done)
		if err != nil || state == leaseDone {
			return img, err
		}
		if state == leaseBusy {
			img, fin, err := s.waitLease(ctx, id, format, done)
			if err != nil || fin {
				return img, err
			}
			continue // expired or released unfinished: take it
		}
		h := s.hold(ctx, id, format)
		img, err = work(ctx, img, h)
		h.release()
		if errors.Is(err, errLeaseLost) {
			slog.WarnContext(ctx, "render lease lost (taken over or the image deleted); looking again", "image", id, "format", format)
			continue
		}
		return img, err
	}
}

// waitLease polls the image's record until done says its file is
// finished, or its lease is gone or expired (false: take it), or ctx ends.
func (s *Service) waitLease(ctx context.Context, id string, format imageparams.Format, done finished) (*Image, bool, error) {
	every := min(max(s.cfg.RenderLease/20, minLeasePoll), maxLeasePoll)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-tick.C:
		}
		img, err := s.records.get(ctx, id)
		if err != nil {
			return nil, false, err
		}
		if fin, err := done(img); fin {
			return img, true, err
		}
		l, err := getLease(ctx, s.cfg.Store, id, format)
		if err != nil {
			return nil, false, err
		}
		if l == nil || !time.Now().Before(l.Expires) || l.Holder == s.instance {
			return nil, false, nil
		}
	}
}

// held is a lease this service holds while it makes a file; without a
// shared store (Config.Shared) there is none, and its methods do nothing.
type held struct {
	s      *Service
	id     string
	format imageparams.Format
	stop   chan struct{}
	done   chan struct{}
}

// hold starts renewing the lease just taken, every third of its life,
// until release.
func (s *Service) hold(ctx context.Context, id string, format imageparams.Format) *held {
	h := &held{s: s, id: id, format: format}
	if s.cfg.Shared {
		h.stop, h.done = make(chan struct{}), make(chan struct{})
		go h.renewing(ctx)
	}
	return h
}

func (h *held) renewing(ctx context.Context) {
	defer close(h.done)
	tick := time.NewTicker(h.s.cfg.RenderLease / 3)
	defer tick.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		err := h.confirm(ctx)
		if errors.Is(err, errLeaseLost) {
			slog.WarnContext(ctx, "render lease lost while rendering", "image", h.id, "format", h.format)
			return
		}
		if err != nil && ctx.Err() == nil {
			slog.WarnContext(ctx, "render lease renewal failed", "image", h.id, "format", h.format, "error", err)
		}
		if err == nil && h.s.renewed != nil {
			h.s.renewed(h.id)
		}
	}
}

// confirm renews the lease now, or answers errLeaseLost when it is no
// longer this service's.
func (h *held) confirm(ctx context.Context) error {
	if !h.s.cfg.Shared {
		return nil // no lease: this process is the store's only one
	}
	ctx, cancel := context.WithTimeout(ctx, h.s.cfg.RenderLease/3)
	defer cancel()
	return h.s.cfg.Store.Update(ctx, recordLock(h.id), func(txn kv.Txn) error {
		l, err := getLease(ctx, txn, h.id, h.format)
		if err != nil {
			return err
		}
		if l == nil || l.Holder != h.s.instance {
			return errLeaseLost
		}
		return putLease(txn, h.id, h.format, lease{Holder: h.s.instance, Expires: time.Now().Add(h.s.cfg.RenderLease)})
	})
}

// release stops the renewals and deletes the lease if it is still this
// service's, also when the caller stopped waiting (Close): the others
// need not wait for it to expire.
func (h *held) release() {
	if !h.s.cfg.Shared {
		return
	}
	close(h.stop)
	<-h.done
	err := h.s.updateRecord(h.id, func(ctx context.Context, txn kv.Txn) error {
		l, err := getLease(ctx, txn, h.id, h.format)
		if err != nil || l == nil || l.Holder != h.s.instance {
			return err
		}
		return txn.Delete(leaseKey(h.id, h.format))
	})
	if err != nil {
		slog.Warn("render lease release failed; it expires", "image", h.id, "format", h.format, "error", err)
	}
}
