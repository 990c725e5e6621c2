package og

import (
	"context"
	"errors"
	"time"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/ogconfig"
	"github.com/pictorhq/pictor/origin/ogpage"
	"github.com/pictorhq/pictor/origin/org"
)

var _ ogconfig.Previewer = (*Service)(nil)

// Preview reads a page of cfg for its organization's preview (GET
// /v1/og-configs/{id}/preview): through the same guarded reader as a
// crawler's request, and admitted as a crawler's request for a new path
// is, by one of the client address's allowance for the configuration. It
// stores nothing, renders nothing and charges nothing: the cards are the
// crawlers' own requests. A page that cannot be read is a 422 naming the
// cause; a spent allowance is a 429 saying so, with Retry-After.
func (s *Service) Preview(ctx context.Context, cfg *ogconfig.Config, o *org.Org, path, client string) (ogconfig.PagePreview, error) {
	out := ogconfig.PagePreview{Path: path}
	if err := s.admitClient(cfg, client); err != nil {
		var ref *refusal
		if errors.As(err, &ref) {
			s.metrics.refused.WithLabelValues(ref.reason).Inc()
			retry := max(ref.retry, time.Second)
			return out, apierr.TooManyRequests(retry, "This address asked for as many new pages of this OG configuration as one address may (%d a minute, crawlers and previews alike); try again in %d s",
				s.cfg.ClientRate, int((retry+time.Second-1)/time.Second))
		}
		return out, err
	}
	src, err := s.cfg.Pages.Fetch(ctx, ogpage.Request{URL: cfg.BaseURL + path, Headers: cfg.Headers, HeaderOrigins: cfg.AdditionalHeaderOrigins})
	if err != nil {
		return out, previewSourceError(err)
	}
	out.Head = src.Head
	return out, nil
}

// previewSourceError is what the organization is told of a page that could
// not be read for a preview: a 422 naming the cause (which names the host,
// never an address).
func previewSourceError(err error) error {
	var e *apierr.Error
	if errors.As(refreshSourceError(err), &e) && e.Status == 422 {
		return &apierr.Error{Status: e.Status, Message: "The page could not be read: " + err.Error(), Cause: err}
	}
	return refreshSourceError(err)
}
