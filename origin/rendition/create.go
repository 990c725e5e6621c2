package rendition

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/render"
	"github.com/pictorhq/pictor/origin/usage"
)

// Item is one image to create.
type Item struct {
	Params imageparams.Params
	// Dedupe reuses an identical image of the organization created within
	// this window; 0 never reuses.
	Dedupe time.Duration
	// ID, when set, is a content-addressed id (signed URLs): an image that
	// already exists under it is reused.
	ID string
	// StorageOnly: the image's storage destination keeps no service copy
	// (see Image.StorageOnly).
	StorageOnly bool
}

// Charge is what a creation consumed, for the x-renders-* headers.
type Charge struct {
	Allowed, Consumed, Used int64
}

// Created is one created (or reused) image.
type Created struct {
	*Image
	Reused bool
}

// Create creates the items as one all-or-nothing operation: reused images
// cost nothing, the others their credits, charged against the plan
// atomically with the records: one transaction under the organization's
// credit lock (usage.Lock), which every origin sharing the store takes.
// Renders start in the background once it committed.
func (s *Service) Create(ctx context.Context, o *org.Org, items []Item) ([]Created, Charge, error) {
	now := s.cfg.Now().UTC()
	var out []Created
	var fresh []*Image
	var charge Charge
	err := s.cfg.Store.Update(ctx, usage.Lock(o.ID), func(txn kv.Txn) error {
		out, fresh = make([]Created, len(items)), nil
		recs := records{txn}
		var credits int64
		pending := map[string]*Image{} // dedupe keys and ids claimed within this call
		for i, it := range items {
			p := it.Params
			if p.MaxWait == 0 {
				p.MaxWait = o.PlanInfo().MaxWaitCap
			}
			var dkey string
			if it.Dedupe > 0 {
				dkey = identity(o.ID, &it.Params)
				if img := pending[dkey]; img != nil {
					out[i] = Created{Image: img, Reused: true}
					continue
				}
				if img, err := dedupeHit(ctx, txn, o.ID, dkey, now.Add(-it.Dedupe)); err != nil {
					return err
				} else if img != nil && img.StorageOnly == it.StorageOnly {
					out[i] = Created{Image: img, Reused: true}
					continue
				}
			}
			id := it.ID
			if id != "" {
				if img := pending[id]; img != nil {
					out[i] = Created{Image: img, Reused: true}
					continue
				}
				img, err := recs.get(ctx, id)
				if err == nil && img.OrgID == o.ID {
					out[i] = Created{Image: img, Reused: true}
					continue
				}
				if err != nil && !errors.Is(err, ErrNotFound) {
					return err
				}
			} else {
				id = uuid.Must(uuid.NewV7()).String()
			}
			img := &Image{ID: id, OrgID: o.ID, CreatedAt: now, Params: p, Credits: Credits(&p), State: StatePending, DedupeKey: dkey,
				SortKey: newSortKey(id), StorageOnly: it.StorageOnly}
			if err := recs.add(txn, img); err != nil {
				return err
			}
			credits += int64(img.Credits)
			fresh = append(fresh, img)
			out[i] = Created{Image: img}
			if dkey != "" {
				pending[dkey] = img
			}
			if it.ID != "" {
				pending[it.ID] = img
			}
		}
		used, err := usage.Charge(ctx, txn, o, now, credits)
		charge = Charge{Allowed: o.PlanInfo().Credits, Consumed: credits, Used: used}
		if err != nil {
			charge.Consumed = 0
		}
		return err
	})
	if errors.Is(err, usage.ErrPlanLimit) {
		return nil, charge, err
	}
	if err != nil {
		return nil, Charge{}, fmt.Errorf("create images: %w", err)
	}
	// Only now that the records are committed: a render started earlier
	// could find no record, or one the commit then did not keep.
	for _, img := range fresh {
		if !img.StorageOnly { // rendered by its PUT /v1/store: no file kept before
			s.prerender(img.ID)
		}
	}
	return out, charge, nil
}

// prerender starts the render now, so the first GET finds the image ready.
// Only BackgroundRenders of them go to the engine at once: the rest wait
// here, where a GET of their image overtakes them (it renders, and the
// background render then finds the image done).
func (s *Service) prerender(id string) {
	if !s.begin() {
		return // closed: the first GET renders it
	}
	s.prerenders.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.prerenders.Done()
		ctx, cancel := context.WithTimeout(s.ctx, 2*time.Minute)
		defer cancel()
		select {
		case s.ahead <- struct{}{}:
			defer func() { <-s.ahead }()
		case <-ctx.Done():
			return
		}
		if _, err := s.master(ctx, id); err != nil && !errors.Is(err, render.ErrQueueFull) && ctx.Err() == nil {
			slog.DebugContext(ctx, "background render failed", "image", id, "error", err)
		}
	}()
}

// identity is the dedupe identity: the organization and every parameter
// but dedupe_duration_s.
func identity(orgID string, p *imageparams.Params) string {
	h := sha256.New()
	h.Write([]byte("pictor dedupe v1\x00" + orgID + "\x00"))
	h.Write(p.Canonical())
	return hex.EncodeToString(h.Sum(nil))
}

// ContentID is the id of the image a signed URL describes: the same
// organization and parameters always give the same id.
func ContentID(orgID string, p *imageparams.Params, extra string) string {
	h := sha256.New()
	h.Write([]byte("pictor signed v1\x00" + orgID + "\x00" + extra + "\x00"))
	h.Write(p.Canonical())
	sum := h.Sum(nil)
	var u uuid.UUID
	copy(u[:], sum)
	u[6] = (u[6] & 0x0f) | 0x80 // version 8: custom
	u[8] = (u[8] & 0x3f) | 0x80 // RFC 4122 variant
	return u.String()
}

// dedupeHit returns the image the dedupe index of r holds for key when it
// was created after since and still exists.
func dedupeHit(ctx context.Context, r kv.Reader, orgID, key string, since time.Time) (*Image, error) {
	raw, err := r.Get(ctx, dedupeKey(orgID, key))
	if errors.Is(err, kv.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get dedupe entry: %w", err)
	}
	img, err := (records{r}).get(ctx, string(raw))
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if img.OrgID != orgID || img.CreatedAt.Before(since) || img.State == StateFailed {
		return nil, nil
	}
	return img, nil
}
