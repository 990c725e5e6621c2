package rendition

import (
	"log/slog"
	"time"

	"github.com/pictorhq/pictor/origin/contract/imaging"
	"github.com/pictorhq/pictor/origin/imageparams"
)

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
// the master's ETag (see Info.ETag) and does nothing when the master
// does not exist yet, is compact already, or would not shrink.
func (s *Service) Compact(id string) error { return s.compactOne(id) }

func (s *Service) compactOne(id string) error {
	before, err := s.records.get(s.ctx, id)
	if err != nil {
		return err
	}
	rend, ok := before.Renditions[string(imageparams.FormatPNG)]
	if !ok {
		return nil
	}
	// The master's render lease keeps every origin's renders and
	// compactions of this master off it while it is swapped; one that
	// another origin holds leaves it alone.
	changed := func(img *Image) (bool, error) {
		return img.SortKey != before.SortKey || img.Renditions[string(imageparams.FormatPNG)] != rend, nil
	}
	_, state, err := s.takeLease(s.ctx, id, imageparams.FormatPNG, changed)
	if err != nil || state != leaseMine {
		return err
	}
	h := s.hold(s.ctx, id, imageparams.FormatPNG)
	defer h.release()
	data, err := s.cfg.Blobs.Read(s.ctx, id, fileNames[imageparams.FormatPNG])
	if err != nil {
		return err
	}
	if int64(len(data)) != rend.Size {
		return nil // not the file the record describes: it is being replaced
	}
	small, err := imaging.CompactPNG(data)
	if err != nil || len(small) >= len(data) {
		return err
	}
	if err := h.confirm(s.ctx); err != nil {
		return err
	}
	if err := s.cfg.Blobs.Put(s.ctx, id, fileNames[imageparams.FormatPNG], small); err != nil {
		return err
	}
	_, err = s.update(id, func(img *Image) {
		// The image may have been deleted and created again under its id
		// (a signed URL's), or dropped, while this one was being encoded.
		if cur, _ := changed(img); cur {
			return
		}
		rend.Size = int64(len(small)) // the ETag stays: it names the pixels
		img.Renditions[string(imageparams.FormatPNG)] = rend
	})
	return err
}
