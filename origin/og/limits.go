package og

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/ogconfig"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/rendition"
	"github.com/pictorhq/pictor/origin/sharedmetric"
	"github.com/pictorhq/pictor/origin/usage"
)

// Reasons an OG request is refused: the label of pictor_og_refused_total.
const (
	reasonDay      = ogconfig.CapDay      // the configuration's new images of the UTC day
	reasonPeriod   = ogconfig.CapPeriod   // the configuration's new images of the billing period
	reasonOrgShare = ogconfig.CapOrgShare // the organization's OG share of its credits
	reasonClient   = "client"             // the client address's uncached requests of the minute
	reasonCredits  = "credits"            // the organization has no credits left
	reasonBudget   = "budget"             // the configuration's renders of the minute (503)
)

var reasons = []string{reasonDay, reasonPeriod, reasonOrgShare, reasonClient, reasonCredits, reasonBudget}

// LimitedMessage is what a visitor refused by a cap, the per-client limit
// or the organization's credits is told: the same words whatever the
// reason, and nothing of the organization's usage.
const LimitedMessage = "This site's social-card images are limited for now; try again later"

// ogCredits is what a new OG image costs: OG images are never jumbo.
const ogCredits = 1

// releaseTimeout bounds the giving back of a reservation, which runs even
// when the request that made it is gone.
const releaseTimeout = 10 * time.Second

// refusal is a request for new work (a page read or a render) that a
// limit refuses. It is answered by answer, never with its cause.
type refusal struct {
	reason string
	retry  time.Duration
	budget int // the render budget, for reasonBudget's message
	cause  error
}

func (r *refusal) Error() string {
	if r.cause != nil {
		return fmt.Sprintf("OG request refused (%s): %v", r.reason, r.cause)
	}
	return "OG request refused (" + r.reason + ")"
}

func (r *refusal) Unwrap() error { return r.cause }

// answer is what the visitor gets: 429 with Retry-After and the one
// generic message; the render budget's pacing keeps its 503.
func (r *refusal) answer() *apierr.Error {
	retry := max(r.retry, time.Second)
	if r.reason == reasonBudget {
		e := apierr.New(http.StatusServiceUnavailable, "This OG configuration started its %d renders of the minute; try again shortly", r.budget)
		return e.WithHeader("Retry-After", retryAfter(retry))
	}
	e := apierr.TooManyRequests(retry, LimitedMessage)
	e.Cause = r
	return e
}

func isRefusal(err error) bool {
	var r *refusal
	return errors.As(err, &r)
}

// capRefusal turns what the caps said into an error for the request: a
// *CapError is a refusal until it frees up; a configuration deleted
// meanwhile is not found.
func (s *Service) capRefusal(err error) error {
	var ce *ogconfig.CapError
	switch {
	case errors.As(err, &ce):
		return &refusal{reason: ce.Reason, retry: ce.Until.Sub(s.cfg.Now()), cause: err}
	case errors.Is(err, ogconfig.ErrNotFound):
		return apierr.NotFound("OG image not found: no enabled OG configuration has this domain id")
	}
	return err
}

// createError turns a failed creation into an error for the request: the
// organization out of credits is a refusal until its billing period ends
// (images.PlanError's text, with the usage, is for the organization's own
// API calls, never for a visitor).
func (s *Service) createError(o *org.Org, err error) error {
	if errors.Is(err, usage.ErrPlanLimit) {
		return &refusal{reason: reasonCredits, retry: usage.PeriodAt(o, s.cfg.Now()).End.Sub(s.cfg.Now()), cause: err}
	}
	return err
}

// admitClient takes one uncached request of the client's allowance for the
// configuration.
func (s *Service) admitClient(cfg *ogconfig.Config, client string) error {
	if ok, retry := s.clients.take(cfg.ID + "\x00" + client); !ok {
		return &refusal{reason: reasonClient, retry: retry}
	}
	return nil
}

// create makes a new image of the configuration: a reservation against
// its caps (exact across origins), one render of its budget, then the
// creation, which charges the credits. The reservation comes first, so
// that a spent cap is what a visitor is told (and a refusal takes no
// render of the minute); it is given back when the budget refuses, or the
// creation fails or charged nothing (another origin made the image
// meanwhile). charged reports a creation that charged credits.
func (s *Service) create(ctx context.Context, cfg *ogconfig.Config, o *org.Org, it rendition.Item) (charged bool, err error) {
	res, err := s.cfg.Caps.Reserve(ctx, cfg, o, int64(rendition.Credits(&it.Params)))
	if err != nil {
		return false, s.capRefusal(err)
	}
	if ok, retry := s.budget.take(cfg.ID); !ok {
		s.release(ctx, cfg, res)
		return false, &refusal{reason: reasonBudget, retry: retry, budget: s.cfg.Budget}
	}
	_, charge, err := s.cfg.Images.Create(ctx, o, []rendition.Item{it})
	if err != nil || charge.Consumed == 0 {
		s.release(ctx, cfg, res)
	}
	if err != nil {
		return false, s.createError(o, err)
	}
	return charge.Consumed > 0, nil
}

// release gives a reservation back, even when the request that made it is
// gone.
func (s *Service) release(ctx context.Context, cfg *ogconfig.Config, res *ogconfig.Reservation) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if err := s.cfg.Caps.Release(rctx, res); err != nil {
		// Counted and not spent: the caps err on the side of fewer images.
		s.log.WarnContext(ctx, "OG image reservation not given back", "config_id", cfg.ID, "error", err)
	}
}

// metrics are the OG serving path's counts.
type metrics struct {
	refused *prometheus.CounterVec
}

func newMetrics(r prometheus.Registerer) (*metrics, error) {
	f := sharedmetric.With(r)
	m := &metrics{refused: f.NewCounterVec(prometheus.CounterOpts{
		Name: "pictor_og_refused_total",
		Help: "OG image requests refused, by reason: day_cap, period_cap and org_share (caps on new images), client (a client address's uncached requests), credits (the organization has none left), budget (the configuration's renders of the minute).",
	}, []string{"reason"})}
	for _, r := range reasons {
		m.refused.WithLabelValues(r)
	}
	return m, f.Err()
}
