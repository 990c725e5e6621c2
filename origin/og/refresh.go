package og

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/ogplatform"
	"github.com/pictorhq/pictor/origin/ogconfig"
	"github.com/pictorhq/pictor/origin/ogpage"
	"github.com/pictorhq/pictor/origin/org"
)

var _ ogconfig.Refresher = (*Service)(nil)

// Refresh reads a page of cfg now, on its organization's request (POST
// /v1/og-configs/{id}/refresh): unconditionally, through the same guarded
// reader as a crawler's request, and renders only when the page's
// identity changed, with the caps, the budget and the credits of any OG
// render. It waits for a read of the page already under way (begun before
// the page changed, maybe) and then reads it itself. A page that cannot be
// read or rendered leaves its record as it was, and the error says why: a
// 422 for the site's page, the organization's own words for a cap or its
// credits (429), the budget's 503.
func (s *Service) Refresh(ctx context.Context, cfg *ogconfig.Config, o *org.Org, path string) (ogconfig.Refreshed, error) {
	key := readKey(cfg.ID, path)
	for range 3 {
		var out ogconfig.Refreshed
		ran := false
		read := s.detached(key, func(rctx context.Context) (any, error) {
			pg, res, err := s.refresh(rctx, cfg, o, path)
			out = res
			if err != nil {
				return nil, err
			}
			return pg, nil
		})
		ch := s.reads.DoChan(key, func() (any, error) {
			ran = true
			return read()
		})
		select {
		case res := <-ch:
			if ran {
				return out, res.Err
			}
			// Joined a read that began before this request: read again.
		case <-ctx.Done():
			return ogconfig.Refreshed{}, ctx.Err()
		}
	}
	return ogconfig.Refreshed{}, apierr.New(http.StatusServiceUnavailable, "The page is being read; try again").WithHeader("Retry-After", "1")
}

// refresh reads the page and makes the images of its variants when its
// inputs changed: those the page had under the configuration's revision,
// else the default platform's. The record it writes replaces whatever a
// read that began earlier stores after it.
func (s *Service) refresh(ctx context.Context, cfg *ogconfig.Config, o *org.Org, path string) (*page, ogconfig.Refreshed, error) {
	out := ogconfig.Refreshed{Path: path}
	prev, err := loadPage(ctx, s.cfg.Store, cfg.ID, path)
	if err != nil {
		return nil, out, err
	}
	variants := []string{variant(cfg, ogplatform.Default)}
	if prev != nil && prev.Revision == cfg.Revision && len(prev.Images) > 0 {
		variants = slices.Sorted(maps.Keys(prev.Images))
	}
	pageURL := cfg.BaseURL + path
	src, err := s.cfg.Pages.Fetch(ctx, ogpage.Request{URL: pageURL, Headers: cfg.Headers, HeaderOrigins: cfg.AdditionalHeaderOrigins})
	now := s.cfg.Now()
	if err != nil {
		return nil, out, refreshSourceError(err)
	}
	res, err := s.resolve(ctx, cfg, o, pageURL, &src.Head)
	if err != nil {
		return nil, out, unprocessable("The page does not make a valid OG image", err)
	}
	next := s.record(cfg, path, src, res, now, prev)
	out.Identity, out.CheckedAt = next.identity(), now
	out.Changed = prev == nil || !prev.sameInputs(next)
	for _, v := range variants {
		if next.Images[v] != "" {
			continue
		}
		id, f, created, err := s.render(ctx, cfg, o, next, v)
		if err != nil {
			return nil, out, s.refreshRenderError(err)
		}
		f.Close()
		next.Images[v] = id
		out.Rendered = out.Rendered || created
	}
	stored, err := s.store(ctx, next, time.Time{})
	if err != nil {
		return nil, out, err
	}
	out.ImageID = stored.Images[variant(cfg, ogplatform.Default)]
	return stored, out, nil
}

// refreshSourceError is what the organization is told of a page that could
// not be read: a 422 naming the cause (which names the host, never an
// address).
func refreshSourceError(err error) error {
	switch {
	case errors.Is(err, ogpage.ErrInvalidRequest):
		return apierr.Internal(err)
	case errors.Is(err, context.Canceled):
		return err
	}
	return &apierr.Error{Status: http.StatusUnprocessableEntity, Message: "The page could not be read: " + err.Error() + "; its current card stays served", Cause: err}
}

// unprocessable turns a client error about the page (its settings, its
// template) into a 422 saying so; other errors stay as they are.
func unprocessable(what string, err error) error {
	e := apierr.From(err)
	if e.Status < 400 || e.Status >= 500 || e.Status == http.StatusTooManyRequests || e.Status == 499 {
		return err
	}
	return &apierr.Error{Status: http.StatusUnprocessableEntity, Message: what + ": " + e.Message + "; its current card stays served", Cause: err}
}

// refreshRenderError is what the organization is told of a render that
// did not happen: a refusal in its own words (the organization may know
// its caps and credits, unlike a visitor), a failed render as a 422.
func (s *Service) refreshRenderError(err error) error {
	var ref *refusal
	if !errors.As(err, &ref) {
		return unprocessable("The page's card could not be rendered", err)
	}
	s.metrics.refused.WithLabelValues(ref.reason).Inc()
	retry := max(ref.retry, time.Second)
	var e *apierr.Error
	switch ref.reason {
	case reasonBudget:
		return ref.answer()
	case reasonDay:
		e = apierr.TooManyRequests(retry, "The page changed, and this OG configuration made its max_new_images_per_day new images of the UTC day; its current card stays served")
	case reasonPeriod:
		e = apierr.TooManyRequests(retry, "The page changed, and this OG configuration made its max_new_images_per_period new images of the billing period; its current card stays served")
	case reasonOrgShare:
		e = apierr.TooManyRequests(retry, "The page changed, and the organization's OG images spent their share (%d %%) of the plan's credits this billing period; its current card stays served", ogconfig.OrgSharePercent)
	case reasonCredits:
		e = apierr.TooManyRequests(retry, "The page changed, and the organization has no image credits left this billing period; its current card stays served")
	default:
		e = ref.answer()
	}
	e.Cause = err
	return e
}
