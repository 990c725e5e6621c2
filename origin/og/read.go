package og

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/ogconfig"
	"github.com/pictorhq/pictor/origin/ogpage"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/rendition"
)

// readTimeout bounds one read of a page with its render: the fetch (10 s)
// and a render that waits up to the plan's longest max_wait_ms.
const readTimeout = 2 * time.Minute

// failedRecheckWait is how long a page whose recheck failed is served as
// it was before the next try.
const failedRecheckWait = time.Minute

// begin counts background work in, unless the service is closing.
func (s *Service) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.wg.Add(1)
	return true
}

// read reads a page that has no image yet, or whose configuration
// changed, once however many requests ask: every waiter gets its result,
// and one that stops waiting does not stop it. The request whose read
// rendered variant v gets the open file of its image too (opened, the
// image whose id the handoff names); the others get nil.
func (s *Service) read(ctx context.Context, cfg *ogconfig.Config, o *org.Org, path, v string) (*page, *handoff, error) {
	// A background recheck of the path shares the key and may end with no
	// page (the page was gone or changed when it began): this request then
	// reads the page itself.
	for range 3 {
		pg, h, err := s.readOnce(ctx, cfg, o, path, v)
		if pg != nil || err != nil {
			return pg, h, err
		}
	}
	return nil, nil, apierr.New(http.StatusServiceUnavailable, "The page is being read; try again").WithHeader("Retry-After", "1")
}

func (s *Service) readOnce(ctx context.Context, cfg *ogconfig.Config, o *org.Org, path, v string) (*page, *handoff, error) {
	key := readKey(cfg.ID, path)
	h := &handoff{variant: v}
	ch := s.reads.DoChan(key, s.detached(key, func(rctx context.Context) (any, error) {
		prev, err := loadPage(ctx, s.cfg.Store, cfg.ID, path)
		if err != nil {
			return nil, err
		}
		if prev != nil && prev.Revision == cfg.Revision && prev.Images[v] != "" {
			return prev, nil // read while this request waited for its turn
		}
		return s.check(rctx, cfg, o, path, prev, []string{v}, true, h)
	}))
	return awaitPage(ctx, ch, h)
}

// detached is the work of a shared read or render under key: counted as
// under way (flying) and as the service's background work, refused once
// the service is closing, and bounded by readTimeout on the service's
// context rather than the request's, which one waiter may leave.
func (s *Service) detached(key string, work func(ctx context.Context) (any, error)) func() (any, error) {
	return func() (any, error) {
		defer s.flying.hold(key)()
		if !s.begin() {
			return nil, apierr.From(apierr.ErrShuttingDown)
		}
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.ctx, readTimeout)
		defer cancel()
		return work(ctx)
	}
}

// awaitPage waits for a shared read or render of a page until ctx is
// done; h is the waiter's handoff, left unless the page comes.
func awaitPage(ctx context.Context, ch <-chan singleflight.Result, h *handoff) (*page, *handoff, error) {
	select {
	case res := <-ch:
		pg, _ := res.Val.(*page) // nil from a recheck that found nothing to do
		if res.Err != nil || pg == nil {
			h.leave()
			return nil, nil, res.Err
		}
		return pg, h, nil
	case <-ctx.Done():
		h.leave()
		return nil, nil, ctx.Err()
	}
}

// recheckLater reads a page that is due (its refresh interval is over, or
// a refresh of every page was asked) in the background, once however many
// requests ask, unless as many rechecks as allowed are running already (a
// later request tries again). A page due for a refresh is read
// unconditionally: a template or a metadata change need not change the
// page's validators.
func (s *Service) recheckLater(cfg *ogconfig.Config, o *org.Org, path string) {
	select {
	case s.slots <- struct{}{}:
	default:
		return
	}
	if !s.begin() {
		<-s.slots
		return
	}
	go func() {
		defer s.wg.Done()
		defer func() { <-s.slots }()
		_, _, _ = s.reads.Do(readKey(cfg.ID, path), func() (any, error) {
			ctx, cancel := context.WithTimeout(s.ctx, readTimeout)
			defer cancel()
			prev, err := loadPage(ctx, s.cfg.Store, cfg.ID, path)
			if err != nil || prev == nil || prev.Revision != cfg.Revision || !prev.due(cfg, s.cfg.Now()) {
				return nil, err // gone, changed, or rechecked meanwhile
			}
			variants := slices.Sorted(maps.Keys(prev.Images))
			return s.check(ctx, cfg, o, path, prev, variants, prev.Generation >= cfg.RefreshGeneration, nil)
		})
		if s.cfg.OnRecheck != nil {
			s.cfg.OnRecheck(cfg.ID, path)
		}
	}()
}

// check reads the page (conditionally when asked and prev is of the same
// revision), works out its request, and makes the images of the variants
// unless they exist already, giving hand the file of its variant. A page
// that cannot be read or rendered keeps its previous images
// (stale-if-error) when it has them.
func (s *Service) check(ctx context.Context, cfg *ogconfig.Config, o *org.Org, path string, prev *page, variants []string, conditional bool, hand *handoff) (*page, error) {
	if prev != nil && prev.Revision != cfg.Revision {
		prev = nil
	}
	since := s.cfg.Now()
	pageURL := cfg.BaseURL + path
	req := ogpage.Request{URL: pageURL, Headers: cfg.Headers, HeaderOrigins: cfg.AdditionalHeaderOrigins}
	if prev != nil && conditional {
		req.ETag, req.LastModified = prev.ETag, prev.LastModified
	}
	src, err := s.cfg.Pages.Fetch(ctx, req)
	now := s.cfg.Now()
	if err != nil {
		return s.keep(ctx, cfg, prev, now, since, variants, sourceError(err), "OG source page unavailable; serving the last image")
	}
	if src.NotModified && prev != nil {
		next := prev.clone()
		next.CheckedAt, next.FreshUntil, next.Generation = now, src.Fresh(now, cfg.RefreshInterval), cfg.RefreshGeneration
		next.ETag, next.LastModified = src.ETag, src.LastModified
		return s.store(ctx, next, since)
	}
	res, err := s.resolve(ctx, cfg, o, pageURL, &src.Head)
	if err != nil {
		return s.keep(ctx, cfg, prev, now, since, variants, err, "OG page does not resolve to an image; serving the last image")
	}
	next := s.record(cfg, path, src, res, now, prev)
	for _, v := range variants {
		if next.Images[v] != "" {
			continue
		}
		id, f, _, err := s.render(ctx, cfg, o, next, v)
		if err != nil {
			return s.keep(ctx, cfg, prev, now, since, variants, err, "OG image render failed; serving the last image")
		}
		hand.give(v, id, f)
		next.Images[v] = id
	}
	return s.store(ctx, next, since)
}

// record is the record of a page read at now that resolved to res, with
// prev's images when the inputs are the same (nothing to render).
func (s *Service) record(cfg *ogconfig.Config, path string, src *ogpage.Page, res *resolved, now time.Time, prev *page) *page {
	next := &page{ConfigID: cfg.ID, Path: path, Revision: cfg.Revision, Generation: cfg.RefreshGeneration, CheckedAt: now,
		FreshUntil: src.Fresh(now, cfg.RefreshInterval), ETag: src.ETag, LastModified: src.LastModified,
		Params: res.params, Request: res.request, Extra: res.extra, Images: map[string]string{}}
	if prev != nil && prev.sameInputs(next) {
		next.Images = maps.Clone(prev.Images) // the same inputs: the same images, nothing to render
	}
	return next
}

// keep answers a failed read: the previous record, with its images, served
// until the next try a minute on (a refresh of every page asked before
// counts as done: the failure is not retried at every request), when it
// has an image for every variant asked for; else the failure.
func (s *Service) keep(ctx context.Context, cfg *ogconfig.Config, prev *page, now, since time.Time, variants []string, cause error, msg string) (*page, error) {
	if prev == nil {
		return nil, cause
	}
	for _, v := range variants {
		if prev.Images[v] == "" {
			return nil, cause
		}
	}
	s.log.WarnContext(ctx, msg, "config_id", cfg.ID, "path", prev.Path, "error", cause)
	next := prev.clone()
	next.FreshUntil = now.Add(failedRecheckWait)
	next.Generation = max(next.Generation, cfg.RefreshGeneration)
	return s.store(ctx, next, since)
}

// store writes a page record read since since, unless the record in the
// store supersedes it (a later revision, or a read that ended after this
// one began: a refresh, another origin's recheck), which is then kept and
// returned. The variants made meanwhile for the same inputs (makeVariant,
// in any process) are kept either way. A zero since always writes (a
// refresh: the page as it is now).
func (s *Service) store(ctx context.Context, next *page, since time.Time) (*page, error) {
	return s.updatePage(ctx, next, func(cur *page) (*page, bool) {
		switch {
		case cur == nil:
		case supersedes(cur, next, since):
			if !cur.sameInputs(next) {
				return cur, false
			}
			added := false
			for v, id := range next.Images {
				if cur.Images[v] == "" {
					cur.Images[v], added = id, true
				}
			}
			return cur, added
		case cur.sameInputs(next):
			for v, id := range cur.Images {
				if next.Images[v] == "" {
					next.Images[v] = id
				}
			}
		}
		return next, true
	})
}

// updatePage is a read-modify-write of pg's page record under the page's
// lock: change gets the stored record (nil when there is none) and returns
// the record to answer with and whether to save it.
func (s *Service) updatePage(ctx context.Context, pg *page, change func(cur *page) (out *page, save bool)) (*page, error) {
	var out *page
	err := s.cfg.Store.Update(ctx, pageLock(pg), func(txn kv.Txn) error {
		cur, err := loadPage(ctx, txn, pg.ConfigID, pg.Path)
		if err != nil {
			return err
		}
		var save bool
		if out, save = change(cur); !save {
			return nil
		}
		return savePage(txn, out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// makeVariant makes the image of another platform for a page read
// already, once however many requests ask. The request that made it gets
// the open file of its image too, as read does.
func (s *Service) makeVariant(ctx context.Context, cfg *ogconfig.Config, o *org.Org, pg *page, v string) (*page, *handoff, error) {
	key := variantKey(cfg.ID, pg.Path, v)
	h := &handoff{variant: v}
	ch := s.variants.DoChan(key, s.detached(key, func(rctx context.Context) (any, error) {
		id, f, _, err := s.render(rctx, cfg, o, pg, v)
		if err != nil {
			return nil, err
		}
		h.give(v, id, f)
		return s.updatePage(rctx, pg, func(cur *page) (*page, bool) {
			if cur == nil || !bytes.Equal(cur.Request, pg.Request) || cur.Extra != pg.Extra {
				// Read again meanwhile: serve what was made for this request.
				out := pg.clone()
				out.Images[v] = id
				return out, false
			}
			cur.Images[v] = id
			return cur, true
		})
	}))
	return awaitPage(ctx, ch, h)
}

// render makes a variant's image and waits until it is rendered: a new
// image takes one render of the configuration's budget, one of its caps
// and its credits (create); one that exists (the same inputs) costs
// nothing. It returns the image's id and its open file, for the caller to
// close (or hand on); created reports a new image, charged.
func (s *Service) render(ctx context.Context, cfg *ogconfig.Config, o *org.Org, pg *page, v string) (id string, f *rendition.File, created bool, err error) {
	it, err := s.item(cfg, o, pg, v)
	if err != nil {
		return "", nil, false, err
	}
	if _, err := s.cfg.Images.Get(ctx, it.ID); errors.Is(err, rendition.ErrNotFound) {
		if created, err = s.create(ctx, cfg, o, it); err != nil {
			return "", nil, false, err
		}
	} else if err != nil {
		return "", nil, false, err
	} else if _, _, err := s.cfg.Images.Create(ctx, o, []rendition.Item{it}); err != nil { // reused: costs nothing
		return "", nil, false, s.createError(o, err)
	}
	if f, err = s.openRendered(ctx, it.ID); err != nil {
		return "", nil, false, err
	}
	return it.ID, f, created, nil
}

func retryAfter(d time.Duration) string {
	secs := int((d + time.Second - 1) / time.Second)
	return strconv.Itoa(max(secs, 1))
}

// pageLock is the kv lock of one page's record: its read-modify-writes
// take it in every process sharing the store.
func pageLock(p *page) string { return string(pageKey(p.ConfigID, p.Path)) }

// sourceError is what a crawler is told when the page could not be read
// and there is no image to serve: a 502 naming the cause, which names the
// host, never an address.
func sourceError(err error) error {
	if errors.Is(err, ogpage.ErrInvalidRequest) {
		return apierr.Internal(err)
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return &apierr.Error{Status: http.StatusBadGateway, Message: "The OG source page could not be read: " + err.Error(), Cause: err}
}
