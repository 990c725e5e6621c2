package rendition

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/blob"
	"github.com/pictorhq/pictor/origin/contract/imaging"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/render"
)

// File is an open rendition ready to be served. Its Object streams from
// the blob store and is read with the context given to Open, or, for a
// file made for this Open, reads the bytes just made (see flight).
type File struct {
	blob.Object
	Image     *Image
	Rendition Info
	Format    imageparams.Format
}

// WriteTo copies the rest of the file to w (with sendfile where the
// Object is a file and w a connection).
func (f *File) WriteTo(w io.Writer) (int64, error) { return io.Copy(w, f.Object) }

// Open returns the file of the image in the format, rendering or converting
// it first when needed, once it is stored. A recorded failure is returned
// as an *apierr.Error.
func (s *Service) Open(ctx context.Context, id string, format imageparams.Format) (*File, error) {
	return s.open(ctx, id, format, false)
}

// OpenForGet is Open for a GET, which answers at once: a master or PDF
// rendered for it is returned from the bytes just made, while they are
// stored (see flight). Conversions are stored first, as with Open.
func (s *Service) OpenForGet(ctx context.Context, id string, format imageparams.Format) (*File, error) {
	return s.open(ctx, id, format, true)
}

func (s *Service) open(ctx context.Context, id string, format imageparams.Format, early bool) (*File, error) {
	img, err := s.records.get(ctx, id)
	if err != nil {
		return nil, err
	}
	if _, ok := img.Renditions[string(format)]; !ok {
		var file *fresh
		switch {
		case format == imageparams.FormatPDF && early:
			file, err = s.awaitFile(ctx, "pdf/"+id, s.makePDF(id))
		case format == imageparams.FormatPDF:
			_, err = s.await(ctx, "pdf/"+id, s.makePDF(id))
		case format == imageparams.FormatPNG && early:
			file, err = s.awaitFile(ctx, "png/"+id, s.makeMaster(id))
		default:
			_, err = s.master(ctx, id)
			if err == nil && format != imageparams.FormatPNG {
				_, err = s.convert(ctx, id, format)
			}
		}
		if err != nil {
			return nil, err
		}
		if file != nil {
			return file.open(format), nil
		}
	}
	wait := 10 * time.Millisecond
	for try := 1; try < openTries; try++ {
		f, err := s.openFile(ctx, id, format, false)
		if !errors.Is(err, errFileChanged) {
			return f, err
		}
		select {
		case <-time.After(wait):
			wait *= 2
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.openFile(ctx, id, format, true)
}

// openTries bounds the opens of a file that changed while it was opened.
const openTries = 5

// errFileChanged: the file, or its record, changed while it was opened.
var errFileChanged = errors.New("the file changed while it was opened")

// openFile opens the image's file in format and checks that it is the
// one the record describes: the record is read before and after the
// open, and the file's size is the recorded one. The compactor of any
// origin swaps a master for smaller bytes under the same ETag (see
// Info.ETag) and then records its size, so a file opened between the
// two is caught as errFileChanged, and opened again. On the last try
// (last), a file whose record held still but whose size is not the
// recorded one (a compactor that died between the two) is served as it
// is, with its own size.
func (s *Service) openFile(ctx context.Context, id string, format imageparams.Format, last bool) (*File, error) {
	img, err := s.records.get(ctx, id)
	if err != nil {
		return nil, err
	}
	rend, ok := img.Renditions[string(format)]
	if !ok {
		return nil, fmt.Errorf("image %s: rendition %s vanished", id, format)
	}
	f, err := s.cfg.Blobs.Open(ctx, id, fileNames[format])
	if err != nil {
		if again, gerr := s.records.get(ctx, id); gerr == nil && again.Renditions[string(format)] != rend {
			return nil, fmt.Errorf("open %s of image %s: %w", format, id, errFileChanged)
		}
		return nil, fmt.Errorf("open %s of image %s: %w", format, id, err)
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open %s of image %s: %w", format, id, err)
	}
	again, err := s.records.get(ctx, id)
	if err != nil {
		f.Close()
		return nil, err
	}
	if again.Renditions[string(format)] != rend || size != rend.Size && !last {
		f.Close()
		return nil, fmt.Errorf("open %s of image %s: %w", format, id, errFileChanged)
	}
	if size != rend.Size {
		slog.WarnContext(ctx, "image file size differs from its record; served as it is", "image", id, "format", format,
			"recorded", rend.Size, "size", size)
		rend.Size = size
	}
	return &File{Object: f, Image: again, Rendition: rend, Format: format}, nil
}

// masterDone: the master exists, or failed for good.
func masterDone(img *Image) (bool, error) {
	switch img.State {
	case StateReady:
		return true, nil
	case StateFailed:
		return true, failureError(img.Failure)
	}
	return false, nil
}

// renditionDone: the file in format exists (a PDF's failure is recorded
// too).
func renditionDone(format imageparams.Format) finished {
	return func(img *Image) (bool, error) {
		if _, ok := img.Renditions[string(format)]; ok {
			return true, nil
		}
		if format == imageparams.FormatPDF && img.PDFFailure != nil {
			return true, failureError(img.PDFFailure)
		}
		return false, nil
	}
}

// master makes sure the PNG master exists (or its failure is recorded).
func (s *Service) master(ctx context.Context, id string) (*Image, error) {
	return s.await(ctx, "png/"+id, s.makeMaster(id))
}

// makeMaster renders the image's PNG master.
func (s *Service) makeMaster(id string) func(context.Context, *flight) (*Image, error) {
	return func(ctx context.Context, f *flight) (*Image, error) {
		img, err := s.leased(ctx, id, imageparams.FormatPNG, masterDone, func(ctx context.Context, img *Image, h *held) (*Image, error) {
			req := renderRequest(img, false)
			if err := s.route(ctx, img, req); err != nil {
				return nil, s.Fail(img, err, false)
			}
			res, err := s.cfg.Engine.Render(ctx, req)
			if err != nil {
				return nil, s.Fail(img, err, false)
			}
			if err := h.confirm(ctx); err != nil {
				return nil, err
			}
			return s.publishAndKeep(ctx, f, img, imageparams.FormatPNG, res.Data, func(img *Image) {
				img.State, img.Width, img.Height = StateReady, res.Width, res.Height
			})
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
		s.storeLater(img)
		return img, nil
	}
}

// convert encodes the master as JPEG or WebP.
func (s *Service) convert(ctx context.Context, id string, format imageparams.Format) (*Image, error) {
	return s.await(ctx, string(format)+"/"+id, s.makeConversion(id, format))
}

// makeConversion encodes the stored master as JPEG or WebP.
func (s *Service) makeConversion(id string, format imageparams.Format) func(context.Context, *flight) (*Image, error) {
	return func(ctx context.Context, f *flight) (*Image, error) {
		return s.leased(ctx, id, format, renditionDone(format), func(ctx context.Context, img *Image, h *held) (*Image, error) {
			master, err := s.cfg.Blobs.Read(ctx, id, fileNames[imageparams.FormatPNG])
			if err != nil {
				return nil, err
			}
			var data []byte
			if format == imageparams.FormatJPG {
				data, err = imaging.ToJPEG(master)
			} else {
				data, err = imaging.ToWebP(master)
			}
			if err != nil {
				return nil, err
			}
			if err := h.confirm(ctx); err != nil {
				return nil, err
			}
			return s.publishAndKeep(ctx, f, img, format, data, nil)
		})
	}
}

// makePDF prints the image's page to PDF.
func (s *Service) makePDF(id string) func(context.Context, *flight) (*Image, error) {
	return func(ctx context.Context, f *flight) (*Image, error) {
		return s.leased(ctx, id, imageparams.FormatPDF, renditionDone(imageparams.FormatPDF), func(ctx context.Context, img *Image, h *held) (*Image, error) {
			req := renderRequest(img, true)
			if err := s.route(ctx, img, req); err != nil {
				return nil, s.Fail(img, err, true)
			}
			res, err := s.cfg.Engine.Render(ctx, req)
			if err != nil {
				return nil, s.Fail(img, err, true)
			}
			if err := h.confirm(ctx); err != nil {
				return nil, err
			}
			return s.publishAndKeep(ctx, f, img, imageparams.FormatPDF, res.Data, nil)
		})
	}
}

// Keep stores a file made for the image (a render's or a conversion's) and
// records it as the image's rendition in its format; change, when set,
// edits the same record update. Renders keep their files through their
// flight (publishAndKeep); tests of this package and of the handlers
// (origin/images) put files in place with it.
func (s *Service) Keep(ctx context.Context, id string, format imageparams.Format, data []byte, change func(*Image)) (*Image, error) {
	return s.store(ctx, id, format, data, renditionOf(data), change)
}

// publishAndKeep is Keep for the work of flight f, img being the record
// read when the work began: the flight publishes the file first (its
// bytes, and the record as the update writes it), so that the GETs
// waiting for it are answered while it is stored. When storing then
// fails, those GETs had a file the record never holds: the flight ends
// with the error, and the next GET makes the file again, with the ETag of
// its own bytes.
func (s *Service) publishAndKeep(ctx context.Context, f *flight, img *Image, format imageparams.Format, data []byte, change func(*Image)) (*Image, error) {
	rend := renditionOf(data)
	early := *img
	early.Renditions = maps.Clone(img.Renditions)
	if change != nil {
		change(&early)
	}
	setRendition(&early, format, rend)
	f.publish(&fresh{data: data, image: &early, rendition: rend})
	return s.store(ctx, img.ID, format, data, rend, change)
}

// store writes data as the image's file in format, then records it as
// rend.
func (s *Service) store(ctx context.Context, id string, format imageparams.Format, data []byte, rend Info, change func(*Image)) (*Image, error) {
	if err := s.cfg.Blobs.Put(ctx, id, fileNames[format], data); err != nil {
		return nil, err
	}
	return s.update(id, func(img *Image) {
		if change != nil {
			change(img)
		}
		setRendition(img, format, rend)
	})
}

// update changes an image's record in one transaction under its record
// lock. When the image was deleted while a file of it was being made, the
// file is removed again, once the transaction found the record gone.
func (s *Service) update(id string, change func(*Image)) (*Image, error) {
	var img *Image
	err := s.updateRecord(id, func(ctx context.Context, txn kv.Txn) error {
		var err error
		recs := records{txn}
		if img, err = recs.get(ctx, id); err != nil {
			return err
		}
		change(img)
		return recs.put(img)
	})
	if errors.Is(err, ErrNotFound) {
		if rerr := s.cfg.Blobs.Remove(s.ctx, id); rerr != nil {
			return nil, rerr
		}
	}
	if err != nil {
		return nil, err
	}
	return img, nil
}

// renditionOf describes data as a rendition: its size, and the ETag its
// bytes give.
func renditionOf(data []byte) Info {
	sum := sha256.Sum256(data)
	return Info{Size: int64(len(data)), ETag: `"` + hex.EncodeToString(sum[:16]) + `"`}
}

func setRendition(img *Image, format imageparams.Format, rend Info) {
	if img.Renditions == nil {
		img.Renditions = map[string]Info{}
	}
	img.Renditions[string(format)] = rend
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

// route sets the render's upstream proxy when the image names one. A proxy
// deleted or disabled since the image was created fails the render (502,
// naming it), as a proxy that cannot be reached does.
func (s *Service) route(ctx context.Context, img *Image, req *render.Request) error {
	id := img.Params.ProxyID
	if id == "" {
		return nil
	}
	if s.cfg.Proxies == nil {
		return fmt.Errorf("%w: proxy %s: proxies are not available", render.ErrInvalidProxy, id)
	}
	up, err := s.cfg.Proxies.Upstream(ctx, img.OrgID, id)
	if err != nil {
		return fmt.Errorf("%w: proxy %s: %v", render.ErrInvalidProxy, id, err)
	}
	req.Upstream = up
	return nil
}
