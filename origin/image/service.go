package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"os"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/blob"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/codec"
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

// Config wires the service.
type Config struct {
	Store  kv.Store
	Blobs  *blob.Store
	Engine *render.Engine
	Now    func() time.Time
	// OnDelete runs after images are deleted, before the delete is answered:
	// the edges drop their copies there.
	OnDelete func(ctx context.Context, ids []string) error
	// BackgroundRenders is how many renders started at creation may run or
	// wait in the render queue at once (default 1); the others wait here,
	// so that a batch cannot fill the queue GETs need.
	BackgroundRenders int
	// CompactIdle is how long the engine must have been idle before the
	// background worker re-compresses a fresh master; 0 means
	// DefaultCompactIdle, a negative value turns the worker off (Compact
	// still works).
	CompactIdle time.Duration
}

// Service creates images and produces their files.
type Service struct {
	cfg     Config
	records records
	flights singleflight.Group
	seed    maphash.Seed
	locks   [64]sync.Mutex // per-image record updates, striped
	orgMu   [16]sync.Mutex // per-organization credit charges, striped
	compact chan string
	ahead   chan struct{} // a slot per background render in the engine
	wg      sync.WaitGroup
	ctx     context.Context
	cancel  context.CancelFunc
}

// NewService returns a service; Close stops its background work. It first
// moves a list index written by an older version to the current layout
// (migrateIndex).
func NewService(cfg Config) (*Service, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.CompactIdle == 0 {
		cfg.CompactIdle = DefaultCompactIdle
	}
	if n, err := migrateIndex(cfg.Store); err != nil {
		return nil, err
	} else if n > 0 {
		slog.Info("image list index migrated to sort keys", "images", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Service{cfg: cfg, records: records{cfg.Store}, seed: maphash.MakeSeed(), compact: make(chan string, 256),
		ahead: make(chan struct{}, max(1, cfg.BackgroundRenders)), ctx: ctx, cancel: cancel}
	if cfg.CompactIdle > 0 {
		s.wg.Add(1)
		go s.compactor()
	}
	return s, nil
}

// Close stops background renders and compaction and waits for them.
func (s *Service) Close() {
	s.cancel()
	s.wg.Wait()
}

func (s *Service) lock(id string) func() {
	m := &s.locks[maphash.String(s.seed, id)%uint64(len(s.locks))]
	m.Lock()
	return m.Unlock
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
func (s *Service) Get(id string) (*Image, error) { return s.records.get(id) }

// File is an open rendition ready to be served.
type File struct {
	*os.File
	Image     *Image
	Rendition Rendition
	Format    imageparams.Format
}

// Open returns the file of the image in the format, rendering or converting
// it first when needed. A recorded failure is returned as an *apierr.Error.
func (s *Service) Open(ctx context.Context, id string, format imageparams.Format) (*File, error) {
	img, err := s.records.get(id)
	if err != nil {
		return nil, err
	}
	if _, ok := img.Renditions[string(format)]; !ok {
		if format == imageparams.FormatPDF {
			_, err = s.pdf(ctx, id)
		} else {
			_, err = s.master(ctx, id)
			if err == nil && format != imageparams.FormatPNG {
				_, err = s.convert(ctx, id, format)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	// Open under the record lock, so the file is the one the record
	// describes even while the compactor swaps the master (same ETag,
	// other bytes: see Rendition.ETag).
	unlock := s.lock(id)
	defer unlock()
	img, err = s.records.get(id)
	if err != nil {
		return nil, err
	}
	rend, ok := img.Renditions[string(format)]
	if !ok {
		return nil, fmt.Errorf("image %s: rendition %s vanished", id, format)
	}
	f, err := s.cfg.Blobs.Open(id, fileNames[format])
	if err != nil {
		return nil, fmt.Errorf("open %s of image %s: %w", format, id, err)
	}
	return &File{File: f, Image: img, Rendition: rend, Format: format}, nil
}

// await runs fn once per key however many callers ask, and lets each caller
// stop waiting when its own ctx ends without stopping the work.
func (s *Service) await(ctx context.Context, key string, fn func(context.Context) (*Image, error)) (*Image, error) {
	ch := s.flights.DoChan(key, func() (any, error) {
		wctx, cancel := context.WithTimeout(s.ctx, 3*time.Minute)
		defer cancel()
		return fn(wctx)
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*Image), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// master makes sure the PNG master exists (or its failure is recorded).
func (s *Service) master(ctx context.Context, id string) (*Image, error) {
	return s.await(ctx, "png/"+id, func(ctx context.Context) (*Image, error) {
		img, err := s.records.get(id)
		if err != nil {
			return nil, err
		}
		switch img.State {
		case StateReady:
			return img, nil
		case StateFailed:
			return nil, failureError(img.Failure)
		}
		res, err := s.cfg.Engine.Render(ctx, renderRequest(img, false))
		if err != nil {
			return nil, s.fail(img, err, false)
		}
		if err := s.cfg.Blobs.Put(id, fileNames[imageparams.FormatPNG], res.Data); err != nil {
			return nil, err
		}
		img, err = s.update(id, func(img *Image) {
			img.State, img.Width, img.Height = StateReady, res.Width, res.Height
			setRendition(img, imageparams.FormatPNG, res.Data)
		})
		if err != nil {
			return nil, err
		}
		if s.cfg.CompactIdle > 0 {
			select {
			case s.compact <- id:
			default: // the compactor is behind; this master stays as captured
			}
		}
		return img, nil
	})
}

// convert encodes the master as JPEG or WebP.
func (s *Service) convert(ctx context.Context, id string, format imageparams.Format) (*Image, error) {
	return s.await(ctx, string(format)+"/"+id, func(ctx context.Context) (*Image, error) {
		img, err := s.records.get(id)
		if err != nil {
			return nil, err
		}
		if _, ok := img.Renditions[string(format)]; ok {
			return img, nil
		}
		master, err := s.cfg.Blobs.Read(id, fileNames[imageparams.FormatPNG])
		if err != nil {
			return nil, err
		}
		var data []byte
		if format == imageparams.FormatJPG {
			data, err = codec.ToJPEG(master)
		} else {
			data, err = codec.ToWebP(master)
		}
		if err != nil {
			return nil, err
		}
		if err := s.cfg.Blobs.Put(id, fileNames[format], data); err != nil {
			return nil, err
		}
		return s.update(id, func(img *Image) { setRendition(img, format, data) })
	})
}

// pdf prints the image's page to PDF.
func (s *Service) pdf(ctx context.Context, id string) (*Image, error) {
	return s.await(ctx, "pdf/"+id, func(ctx context.Context) (*Image, error) {
		img, err := s.records.get(id)
		if err != nil {
			return nil, err
		}
		if _, ok := img.Renditions[string(imageparams.FormatPDF)]; ok {
			return img, nil
		}
		if img.PDFFailure != nil {
			return nil, failureError(img.PDFFailure)
		}
		res, err := s.cfg.Engine.Render(ctx, renderRequest(img, true))
		if err != nil {
			return nil, s.fail(img, err, true)
		}
		if err := s.cfg.Blobs.Put(id, fileNames[imageparams.FormatPDF], res.Data); err != nil {
			return nil, err
		}
		return s.update(id, func(img *Image) { setRendition(img, imageparams.FormatPDF, res.Data) })
	})
}

// update changes an image's record under its lock. When the image was
// deleted while a file of it was being made, the file is removed again.
func (s *Service) update(id string, change func(*Image)) (*Image, error) {
	unlock := s.lock(id)
	defer unlock()
	img, err := s.records.get(id)
	if errors.Is(err, ErrNotFound) {
		if rerr := s.cfg.Blobs.Remove(id); rerr != nil {
			return nil, rerr
		}
	}
	if err != nil {
		return nil, err
	}
	change(img)
	return img, s.records.put(img)
}

func setRendition(img *Image, format imageparams.Format, data []byte) {
	if img.Renditions == nil {
		img.Renditions = map[string]Rendition{}
	}
	sum := sha256.Sum256(data)
	img.Renditions[string(format)] = Rendition{Size: int64(len(data)), ETag: `"` + hex.EncodeToString(sum[:16]) + `"`}
}

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
	case errors.Is(err, render.ErrUnreachable):
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

// DefaultCompactIdle is how long the render engine must have been idle
// before the compactor takes a core: a client rendering one image after
// another leaves the engine idle for a few milliseconds between renders,
// and a compaction started then would slow its next render.
const DefaultCompactIdle = time.Second

// compactor re-encodes fresh masters with stronger compression, off the
// request path (captures use Chromium's fast encoder for latency) and only
// once no render has run or waited for CompactIdle: on 2 cores it would
// otherwise take a quarter of the renders' CPU. Under steady load masters
// stay as captured until the load pauses; those it has no room for stay
// as captured.
func (s *Service) compactor() {
	defer s.wg.Done()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		var id string
		select {
		case <-s.ctx.Done():
			return
		case id = <-s.compact:
		}
		for s.cfg.Engine.IdleFor() < s.cfg.CompactIdle {
			select {
			case <-s.ctx.Done():
				return
			case <-tick.C:
			}
		}
		if err := s.compactOne(id); err != nil {
			slog.Warn("master compaction failed", "image", id, "error", err)
		}
	}
}

// Compact re-encodes the image's PNG master now, whatever the render
// engine's load (the background worker waits for it to be idle). It keeps
// the master's ETag (see Rendition.ETag) and does nothing when the master
// does not exist yet, is compact already, or would not shrink.
func (s *Service) Compact(id string) error { return s.compactOne(id) }

func (s *Service) compactOne(id string) error {
	before, err := s.records.get(id)
	if err != nil {
		return err
	}
	rend, ok := before.Renditions[string(imageparams.FormatPNG)]
	if !ok {
		return nil
	}
	data, err := s.cfg.Blobs.Read(id, fileNames[imageparams.FormatPNG])
	if err != nil {
		return err
	}
	if int64(len(data)) != rend.Size {
		return nil // not the file the record describes: it is being replaced
	}
	small, err := codec.CompactPNG(data)
	if err != nil || len(small) >= len(data) {
		return err
	}
	unlock := s.lock(id)
	defer unlock()
	img, err := s.records.get(id)
	if err != nil {
		return err
	}
	// The image may have been deleted and created again under its id (a
	// signed URL's) while this one was being encoded.
	if img.SortKey != before.SortKey || img.Renditions[string(imageparams.FormatPNG)] != rend {
		return nil
	}
	if err := s.cfg.Blobs.Put(id, fileNames[imageparams.FormatPNG], small); err != nil {
		return err
	}
	rend.Size = int64(len(small)) // the ETag stays: it names the pixels
	img.Renditions[string(imageparams.FormatPNG)] = rend
	return s.records.put(img)
}

// renderRequest maps an image's parameters to a render.
func renderRequest(img *Image, pdf bool) *render.Request {
	p := &img.Params
	r := &render.Request{
		OrgID:                img.OrgID,
		HTML:                 p.HTML,
		URL:                  p.URL,
		CSS:                  p.CSS,
		GoogleFonts:          p.GoogleFonts,
		DeviceScale:          p.DeviceScale(),
		Mobile:               p.ViewportMobile,
		Landscape:            p.ViewportLandscape,
		Touch:                p.ViewportTouch,
		MediaType:            string(p.MediaType),
		ColorScheme:          string(p.ColorScheme),
		Timezone:             p.Timezone,
		Selector:             p.Selector,
		Delay:                p.Delay,
		MaxWait:              p.MaxWait,
		WhenReady:            p.RenderWhenReady,
		FullPage:             p.FullScreen,
		BlockConsent:         p.BlockConsentBanners,
		Twemoji:              p.Twemoji(),
		Transparent:          p.TransparentBackground,
		Headers:              p.Headers,
		HeaderOrigins:        p.AdditionalHeaderOrigins,
		HeadersOnSubrequests: p.IncludeHeadersOnSubrequests,
		IdentifyAsService:    p.IdentifyAsService,
		MaxWidth:             MaxSide,
		MaxHeight:            MaxSide,
		MaxPixels:            MaxPixels,
	}
	if p.Viewport != nil {
		r.ViewportWidth, r.ViewportHeight = p.Viewport.Width, p.Viewport.Height
	}
	if p.Jumbo != nil {
		r.MaxWidth = min(MaxSide, p.Jumbo.Width)
		r.MaxHeight = min(p.Jumbo.Height, MaxPixels/max(1, r.MaxWidth))
	}
	if pdf {
		r.PDF = &render.PDFOptions{Scale: 1}
		if o := p.PDF; o != nil {
			r.PDF.PageWidth, r.PDF.PageHeight, r.PDF.PrintBackground = o.PageWidth, o.PageHeight, o.PrintBackground
			if o.Scale > 0 {
				r.PDF.Scale = o.Scale
			}
			if m := o.Margins; m != nil {
				r.PDF.Margins = [4]float64{m.Top, m.Right, m.Bottom, m.Left}
			}
		}
	}
	return r
}
