package og

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/contract/ogplatform"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/ogconfig"
	"github.com/pictorhq/pictor/origin/ogpage"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/rendition"
)

// Configs finds OG configurations by their public domain id.
type Configs interface {
	ByDomainID(ctx context.Context, domainID string) (*ogconfig.Config, error)
}

// Orgs finds organizations.
type Orgs interface {
	Get(ctx context.Context, id string) (*org.Org, error)
}

// Images creates and opens images (package images' Service).
type Images interface {
	Create(ctx context.Context, o *org.Org, items []rendition.Item) ([]rendition.Created, rendition.Charge, error)
	Open(ctx context.Context, id string, format imageparams.Format) (*rendition.File, error)
	Get(ctx context.Context, id string) (*rendition.Image, error)
}

// Pages fetches source pages (package ogpage's Fetcher).
type Pages interface {
	Fetch(ctx context.Context, req ogpage.Request) (*ogpage.Page, error)
}

// Templates evaluates a templated request (package template's Handler).
type Templates interface {
	Expand(ctx context.Context, orgID string, obj *field.Object, pathID string, pathVersion int) (*field.Object, string, int, error)
}

// Caps counts new images against the configurations' caps and their
// organizations' OG share (package ogconfig's Store).
type Caps interface {
	Room(ctx context.Context, c *ogconfig.Config, o *org.Org, credits int64) error
	Reserve(ctx context.Context, c *ogconfig.Config, o *org.Org, credits int64) (*ogconfig.Reservation, error)
	Release(ctx context.Context, r *ogconfig.Reservation) error
}

var _ Caps = (*ogconfig.Store)(nil)

// Config wires a Service.
type Config struct {
	Store     kv.Store
	Configs   Configs
	Orgs      Orgs
	Images    Images
	Pages     Pages
	Templates Templates
	Caps      Caps
	// Budget is the new renders a configuration may start a minute, in
	// this process: the pacing of a burst (the caps bound the total).
	Budget int
	// ClientRate and ClientBurst are the requests a minute, and at once,
	// one client address may make per configuration that read a page or
	// render (a path or variant without an image); ClientKeys bounds the
	// addresses remembered.
	ClientRate, ClientBurst, ClientKeys int
	// Registerer receives the metrics; nil skips them.
	Registerer prometheus.Registerer
	// StaleRetry is how soon the edge asks again while a stale page is
	// being read, and how long a failed recheck waits before the next.
	StaleRetry time.Duration
	// Rechecks bounds the pages read in the background at once.
	Rechecks int
	Now      func() time.Time
	Logger   *slog.Logger
	// OnRecheck, when set, is told of each background recheck once it
	// ended (whatever its outcome): an observer, for tests.
	OnRecheck func(configID, path string)
}

// DefaultConfig returns the defaults: a budget of DefaultBudget, the
// per-client limit of DefaultClientRate, DefaultClientBurst and
// DefaultClientKeys, a stale page asked again after 10 s, 4 background
// rechecks at once.
func DefaultConfig() Config {
	return Config{Budget: DefaultBudget, ClientRate: DefaultClientRate, ClientBurst: DefaultClientBurst, ClientKeys: DefaultClientKeys,
		StaleRetry: 10 * time.Second, Rechecks: 4, Now: time.Now, Logger: slog.Default()}
}

// Validate reports the first missing part.
func (c *Config) Validate() error {
	switch {
	case c.Store == nil || c.Configs == nil || c.Orgs == nil || c.Images == nil || c.Pages == nil || c.Templates == nil || c.Caps == nil:
		return errors.New("og: store, configurations, organizations, images, pages, templates and caps are required")
	case c.Budget <= 0:
		return fmt.Errorf("og: render budget %d: must be positive", c.Budget)
	case c.ClientRate <= 0 || c.ClientBurst <= 0 || c.ClientKeys <= 0:
		return fmt.Errorf("og: per-client limit %d a minute, burst %d, %d addresses: must be positive", c.ClientRate, c.ClientBurst, c.ClientKeys)
	case c.StaleRetry <= 0 || c.Rechecks <= 0:
		return errors.New("og: stale retry and rechecks must be positive")
	case c.Now == nil || c.Logger == nil:
		return errors.New("og: Now and Logger are required (DefaultConfig sets them)")
	}
	return nil
}

// Service answers GET /v1/og/{domain_id}/{path...} at the origin.
type Service struct {
	cfg     Config
	log     *slog.Logger
	budget  *budget
	clients *clients
	metrics *metrics

	reads    singleflight.Group // one read of a page at a time, per configuration and path
	variants singleflight.Group // one render of a variant at a time
	flying   flying             // the reads and renders under way
	slots    chan struct{}      // background rechecks running

	ctx    context.Context // ends at Close: background rechecks stop
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	closing bool
}

// New returns a Service.
func New(cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, log: cfg.Logger, budget: newBudget(cfg.Budget, cfg.Now),
		clients: newClients(cfg.ClientRate, cfg.ClientBurst, cfg.ClientKeys, cfg.Now), metrics: m,
		slots: make(chan struct{}, cfg.Rechecks)}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Close stops the background rechecks and waits for them.
func (s *Service) Close() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
}

// ServeHTTP answers GET and HEAD of /v1/og/{domain_id}/{path...}: the
// image of that page for the crawler's platform (X-Pictor-Og-Platform
// from the edge, else the User-Agent). Every answer, errors included,
// carries Vary: User-Agent, as the edge's do: a cache in front that keys
// on the URL alone would give one crawler's size to all.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Vary", "User-Agent")
	notFound := apierr.NotFound("OG image not found: no enabled OG configuration has this domain id")
	cfg, err := s.cfg.Configs.ByDomainID(r.Context(), r.PathValue("domain_id"))
	if errors.Is(err, ogconfig.ErrNotFound) || (err == nil && cfg.Disabled) {
		s.fail(w, r, notFound)
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	o, err := s.cfg.Orgs.Get(r.Context(), cfg.OrgID)
	if err != nil || o.Suspended {
		s.fail(w, r, notFound)
		return
	}
	raw := strings.TrimPrefix(r.URL.EscapedPath(), contract.OGPrefix+r.PathValue("domain_id"))
	path, err := ogplatform.NormalizePath(raw)
	if err != nil {
		s.fail(w, r, apierr.BadRequest("Malformed page path: %s", raw))
		return
	}
	pl, ok := ogplatform.ByName(r.Header.Get(contract.HeaderOGPlatform))
	if !ok {
		pl = ogplatform.FromUserAgent(r.UserAgent())
	}
	client := "-" // no address: one allowance for all such requests
	if a, ok := contract.ClientAddr(r.Header.Get(contract.HeaderForwardedFor), r.RemoteAddr); ok {
		client = contract.ClientKey(a)
	}
	f, pg, err := s.image(r.Context(), cfg, o, path, pl, client)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer f.Close()
	s.write(w, r, cfg, o, pg, f)
}

// fail answers an error, never to be kept; a refusal is counted and
// answered in its generic words.
func (s *Service) fail(w http.ResponseWriter, r *http.Request, err error) {
	w.Header().Set("Cache-Control", "no-store")
	var ref *refusal
	if errors.As(err, &ref) {
		s.metrics.refused.WithLabelValues(ref.reason).Inc()
		err = ref.answer()
	}
	apierr.Write(w, r, err)
}

// write sends the image: its id is its ETag (the identity of every input),
// fresh for what is left of the page's refresh interval. It is tagged with
// its configuration and its page, for the purges of a configuration's
// change and of a page's refresh.
func (s *Service) write(w http.ResponseWriter, r *http.Request, cfg *ogconfig.Config, o *org.Org, pg *page, f *rendition.File) {
	now := s.cfg.Now()
	maxAge := pg.FreshUntil.Sub(now)
	if pg.due(cfg, now) {
		maxAge = s.cfg.StaleRetry // being read again: ask again soon
	}
	swr := max(cfg.RefreshInterval, time.Minute)
	etag := `"` + f.Image.ID + `"`
	hd := w.Header()
	hd.Set("ETag", etag)
	hd.Set("Cache-Control", fmt.Sprintf("public, max-age=%d, stale-while-revalidate=%d", int(maxAge/time.Second), int(swr/time.Second)))
	hd.Set("Content-Type", "image/png")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set(contract.HeaderOrg, o.ID)
	hd.Set(contract.HeaderTag, contract.JoinTags(contract.OGConfigTag(cfg.ID), contract.OGPageTag(cfg.ID, pg.Path)))
	mode := contract.OGAsIs
	if cfg.OptimizationMode == ogconfig.PostProcess {
		mode = contract.OGFit
		if sc := pg.scale(); sc != 1 {
			hd.Set(contract.HeaderOGScale, strconv.FormatFloat(sc, 'f', -1, 64))
		}
	}
	hd.Set(contract.HeaderOGMode, mode)
	if inm := r.Header.Get("If-None-Match"); inm != "" && etagMatch(inm, etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hd.Set("Content-Length", strconv.FormatInt(f.Rendition.Size, 10))
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.WriteHeader(http.StatusOK)
	if _, err := f.WriteTo(w); err != nil {
		s.log.DebugContext(r.Context(), "OG image write failed", "error", err)
	}
}

// etagMatch reports whether an If-None-Match list names etag (weakly, as
// RFC 9110 compares for If-None-Match).
func etagMatch(header, etag string) bool {
	for tag := range strings.SplitSeq(header, ",") {
		tag = strings.TrimSpace(tag)
		if tag == "*" || strings.TrimPrefix(tag, "W/") == etag {
			return true
		}
	}
	return false
}

// image returns the open image of a page for a platform: read the page
// first when it is new or its configuration changed; start a background
// recheck when its refresh interval is over, serving the current image
// meanwhile. New work (a page read or a render) is admitted by the
// client's allowance when the path has no image for the platform at all
// and the work is not under way already (joining it starts nothing), and
// by the caps; a page whose configuration changed keeps its last image
// while the caps refuse a new one.
func (s *Service) image(ctx context.Context, cfg *ogconfig.Config, o *org.Org, path string, pl ogplatform.Platform, client string) (*rendition.File, *page, error) {
	pg, err := loadPage(ctx, s.cfg.Store, cfg.ID, path)
	if err != nil {
		return nil, nil, err
	}
	v := variant(cfg, pl)
	current := pg != nil && pg.Revision == cfg.Revision
	if !current || pg.Images[v] == "" {
		work := readKey(cfg.ID, path)
		if current {
			work = variantKey(cfg.ID, path, v)
		}
		if pg == nil || pg.Images[v] == "" {
			done, err := s.flying.enter(work, func() error { return s.admitClient(cfg, client) })
			if err != nil {
				return nil, nil, err
			}
			defer done()
		}
		if err := s.cfg.Caps.Room(ctx, cfg, o, ogCredits); err != nil {
			return s.last(ctx, pg, v, s.capRefusal(err))
		}
	}
	var made *handoff // the file of the image this request's read or render made
	if !current {
		next, h, err := s.read(ctx, cfg, o, path, v)
		if err != nil {
			return s.last(ctx, pg, v, err)
		}
		pg, made = next, h
	} else if pg.due(cfg, s.cfg.Now()) {
		s.recheckLater(cfg, o, path)
	}
	id := pg.Images[v]
	if id == "" { // another platform's image of a page read already
		made.leave()
		if pg, made, err = s.makeVariant(ctx, cfg, o, pg, v); err != nil {
			return nil, nil, err
		}
		id = pg.Images[v]
	}
	if madeID, f := made.take(); f != nil {
		if madeID == id {
			return f, pg, nil
		}
		f.Close() // the page was read again meanwhile: its image is another
	}
	f, err := s.cfg.Images.Open(ctx, id, imageparams.FormatPNG)
	if err != nil {
		return nil, nil, err
	}
	return f, pg, nil
}

// last answers a refused read of a page whose configuration changed with
// the image made under an earlier revision, to be asked for again soon
// (stale-if-error); without one, the refusal. Other errors stay errors.
func (s *Service) last(ctx context.Context, pg *page, v string, cause error) (*rendition.File, *page, error) {
	if pg == nil || pg.Images[v] == "" || !isRefusal(cause) {
		return nil, nil, cause
	}
	f, err := s.cfg.Images.Open(ctx, pg.Images[v], imageparams.FormatPNG)
	if err != nil {
		return nil, nil, cause
	}
	s.log.DebugContext(ctx, "OG image of a changed configuration refused; serving the last image", "config_id", pg.ConfigID, "path", pg.Path, "error", cause)
	stale := pg.clone()
	stale.FreshUntil = time.Time{}
	return f, stale, nil
}

// Forget drops what the service keeps of a deleted configuration: its
// pages' records and its render budget. The images stay the
// organization's, like any other.
func (s *Service) Forget(ctx context.Context, configID string) error {
	s.budget.forget(configID)
	it := s.cfg.Store.Iterate(ctx, pagePrefix(configID), kv.IterOptions{})
	var keys [][]byte
	for it.Next() {
		keys = append(keys, append([]byte(nil), it.Key()...))
	}
	err := it.Err()
	it.Close()
	if err != nil {
		return fmt.Errorf("list OG pages of %s: %w", configID, err)
	}
	for len(keys) > 0 {
		n := min(len(keys), 1000)
		b := s.cfg.Store.NewBatch()
		for _, k := range keys[:n] {
			b.Delete(k)
		}
		err := b.Commit()
		b.Close()
		if err != nil {
			return fmt.Errorf("forget OG pages of %s: %w", configID, err)
		}
		keys = keys[n:]
	}
	return nil
}
