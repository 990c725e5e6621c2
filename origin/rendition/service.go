package rendition

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/blob"
	"github.com/pictorhq/pictor/origin/egress"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/render"
)

// Output limits, in device pixels.
const (
	// MaxSide bounds each side of an image without jumbo: the largest
	// surface Chromium captures in one piece.
	MaxSide = 16384
	// MaxPixels bounds every image's area (a 256 MB bitmap), jumbo or not;
	// a taller output is cut.
	MaxPixels = 64_000_000
	// JumboCreditPixels is what one credit of a jumbo image buys: a jumbo
	// image costs ceil(jumbo_max_width × jumbo_max_height / JumboCreditPixels)
	// credits, at least 2.
	JumboCreditPixels = 10_000_000
)

// Files of an image in the blob store, by format.
var fileNames = map[imageparams.Format]string{
	imageparams.FormatPNG:  "image.png",
	imageparams.FormatJPG:  "image.jpg",
	imageparams.FormatWebP: "image.webp",
	imageparams.FormatPDF:  "document.pdf",
}

// FileName is the name of an image's file (in its blob store) of the
// rendition in format, a key of Image.Renditions; false for an unknown
// format.
func FileName(format string) (string, bool) {
	name, ok := fileNames[imageparams.Format(format)]
	return name, ok
}

// Config wires the service: its parts (Store, Blobs, Engine, ...) and its
// settings. Start from DefaultConfig, which holds the settings' defaults,
// and set the parts.
type Config struct {
	Store  kv.Store
	Blobs  blob.Blobs
	Engine Engine
	Now    func() time.Time
	// RenderLease is how long a render lease lasts unless renewed
	// (DefaultRenderLease): the longest another origin waits for a render
	// whose origin died before taking it over (see lease.go).
	RenderLease time.Duration
	// Shared says other processes use the same store (origins on one
	// PostgreSQL database): files are then made under render leases. A
	// store only this process opens (the embedded default) needs none:
	// the in-process flights already make each file once, and a lease
	// would only add synced writes to every render.
	Shared bool
	// OnDelete runs after images are deleted, before the delete is answered:
	// the edges drop their copies there.
	OnDelete func(ctx context.Context, ids []string) error
	// BackgroundRenders is how many renders started at creation may run or
	// wait in the render queue at once (default 1); the others wait here,
	// so that a batch cannot fill the queue GETs need.
	BackgroundRenders int
	// CompactIdle is how long the engine must have been idle before the
	// background worker re-compresses a fresh master (DefaultCompactIdle);
	// a negative value turns the worker off (Compact still works).
	CompactIdle time.Duration
	// Proxies resolves an image's proxy_id when it is rendered; nil
	// refuses every image that names one.
	Proxies Proxies
	// Destinations checks and opens organizations' storage destinations;
	// nil refuses every image that names one.
	Destinations Destinations
	// StorageWrites is how many background writes to storage destinations
	// run at once (default 1); up to StorageQueue more wait (default 256),
	// the rest are dropped with a warning and counted (a PUT /v1/store
	// writes them).
	StorageWrites, StorageQueue int
	// OnStored, when set, is told of each background write to a storage
	// destination once it ended: an observer, for tests.
	OnStored func(imageID string, err error)
}

// Engine renders pages (a *render.Engine).
type Engine interface {
	Render(ctx context.Context, r *render.Request) (*render.Result, error)
	// IdleFor is how long no render has run or waited.
	IdleFor() time.Duration
}

var _ Engine = (*render.Engine)(nil)

// Proxies finds the route of an organization's proxy.
type Proxies interface {
	// Upstream returns the proxy's route with its credentials, or an error
	// saying why the proxy cannot be used (deleted, disabled).
	Upstream(ctx context.Context, orgID, proxyID string) (*egress.Upstream, error)
}

// Service creates images and produces their files.
type Service struct {
	cfg     Config
	records records
	// flights are the files being made, by key (await).
	flightsMu sync.Mutex
	flights   map[string]*flight
	// instance names this service as a render lease's holder.
	instance string
	// renewed, when set before the first render, is told of each render
	// lease renewed: an observer, for tests.
	renewed func(id string)
	// storing, when set before the first delete, is told of each delete
	// that waits for a file being stored: an observer, for tests.
	storing func(id string)
	// prerenders counts the background renders started at creation
	// (prerender), so that a test can wait for them to end.
	prerenders sync.WaitGroup
	compact    chan string
	stores     chan string    // images whose master is to be written to their destination
	dropped    atomic.Uint64  // writes refused by a full stores queue
	ahead      chan struct{}  // a slot per background render in the engine
	wg         sync.WaitGroup // background renders, the compactor, and the work await runs
	closeMu    sync.Mutex     // orders wg.Add (begin) before Close's wg.Wait
	closed     bool
	ctx        context.Context
	cancel     context.CancelFunc
}

// DefaultConfig returns the settings' defaults, without the parts.
func DefaultConfig() Config {
	return Config{Now: time.Now, RenderLease: DefaultRenderLease, BackgroundRenders: 1, CompactIdle: DefaultCompactIdle,
		StorageWrites: 1, StorageQueue: storeQueue}
}

// Validate refuses a Config missing a part NewService needs, or with a
// setting out of range.
func (c Config) Validate() error {
	switch {
	case c.Store == nil || c.Blobs == nil || c.Engine == nil || c.Now == nil:
		return errors.New("rendition: Store, Blobs, Engine and Now are required")
	case c.RenderLease <= 0:
		return fmt.Errorf("rendition: RenderLease %v: want more than 0", c.RenderLease)
	case c.BackgroundRenders < 1:
		return fmt.Errorf("rendition: BackgroundRenders %d: want at least 1", c.BackgroundRenders)
	case c.CompactIdle == 0:
		return errors.New("rendition: CompactIdle 0: want a wait, or a negative value to turn compaction off")
	case c.StorageWrites < 1 || c.StorageQueue < 1:
		return fmt.Errorf("rendition: StorageWrites %d, StorageQueue %d: want at least 1 each", c.StorageWrites, c.StorageQueue)
	}
	return nil
}

// NewService returns a service; Close stops its background work. It first
// moves a list index written by an older version to the current layout
// (migrateIndex).
func NewService(ctx context.Context, cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if n, err := migrateIndex(ctx, cfg.Store); err != nil {
		return nil, err
	} else if n > 0 {
		slog.Info("image list index migrated to sort keys", "images", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Service{cfg: cfg, records: records{cfg.Store}, instance: rand.Text(), compact: make(chan string, 256), flights: map[string]*flight{},
		ahead: make(chan struct{}, cfg.BackgroundRenders), ctx: ctx, cancel: cancel}
	if cfg.CompactIdle > 0 {
		s.wg.Add(1)
		go s.compactor()
	}
	if cfg.Destinations != nil {
		s.stores = make(chan string, cfg.StorageQueue)
		for range cfg.StorageWrites {
			s.wg.Add(1)
			go s.storer()
		}
	}
	return s, nil
}

// Close stops background renders and compaction, and the renders and
// conversions callers started (which outlive a caller that stopped
// waiting), and waits for them; none starts afterwards.
func (s *Service) Close() {
	s.closeMu.Lock()
	s.closed = true
	s.closeMu.Unlock()
	s.cancel()
	s.wg.Wait()
}

// begin counts a piece of work Close must wait for, and reports false once
// Close has begun: then the work must not start.
func (s *Service) begin() bool {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	return true
}

// recordLock is the Update lock (kv.Store.Update) of an image: every
// change of its record, its render leases and the refund its failure
// owes is made under it, by whichever origin makes it.
func recordLock(id string) string { return "image/" + id }

// storeWait bounds one record transaction of a render, a conversion or
// background work, its wait for the lock included. Such a transaction
// runs to its end even when the caller stopped waiting, as the file it
// records does.
const storeWait = 30 * time.Second

// updateRecord runs fn as one transaction under the image's record lock.
// fn reads with the ctx it is given: the transaction's, which the
// caller's cancellation does not end.
func (s *Service) updateRecord(id string, fn func(ctx context.Context, txn kv.Txn) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), storeWait)
	defer cancel()
	return s.cfg.Store.Update(ctx, recordLock(id), func(txn kv.Txn) error { return fn(ctx, txn) })
}

// Credits returns what creating an image with p costs.
func Credits(p *imageparams.Params) int {
	if p.Jumbo == nil {
		return 1
	}
	px := int64(p.Jumbo.Width) * int64(p.Jumbo.Height)
	return max(2, int((px+JumboCreditPixels-1)/JumboCreditPixels))
}

// Get returns the record of an image.
func (s *Service) Get(ctx context.Context, id string) (*Image, error) { return s.records.get(ctx, id) }
