package images

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/pictorhq/pictor/origin/blob"
	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/imaging"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/rendition"
)

// ParsePath splits "<id>[.ext]" into a valid image id and its format. The
// extension is read as the edge reads it (imaging.ParseFormat: either
// case, jpeg for jpg), so that both serve one format for one spelling;
// "<id>." names none.
func ParsePath(seg string) (string, imageparams.Format, bool) {
	id, ext, hasExt := strings.Cut(seg, ".")
	format, ok := imaging.ParseFormat(ext)
	if !ok || (hasExt && ext == "") {
		return "", "", false
	}
	u, err := uuid.Parse(id)
	if err != nil || len(id) != 36 {
		return "", "", false
	}
	return u.String(), imageparams.Format(format), true
}

// Get handles GET /v1/image/{id}[.ext]: public, the unguessable id is the
// capability, valid while its organization is active.
func (h *Handler) Get(w http.ResponseWriter, r *http.Request) error {
	id, format, ok := ParsePath(r.PathValue("id"))
	if !ok {
		return apierr.NotFound("Image not found")
	}
	return h.serve(w, r, id, format)
}

// serve answers with the image's file in the format.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, id string, format imageparams.Format) error {
	ctx := r.Context()
	if partial(r, format) {
		ctx = blob.Partial(ctx)
	}
	f, err := h.open(ctx, id, format)
	if err != nil {
		w.Header().Set("Cache-Control", "no-store")
		return err
	}
	defer f.Close()
	hd := w.Header()
	hd.Set("Content-Type", contentTypes[format])
	hd.Set("ETag", f.Rendition.ETag)
	hd.Set("Cache-Control", "public, max-age=31536000, immutable")
	hd.Set("X-Content-Type-Options", "nosniff")
	// Notes for the edge's cache (it strips them): what to purge this by.
	hd.Set(contract.HeaderOrg, f.Image.OrgID)
	hd.Set(contract.HeaderImage, f.Image.ID)
	ranges := rangeFormats[format]
	if !ranges {
		// The ETag names the image, not its bytes (the compactor re-encodes
		// a PNG master under it): a range could splice two versions, so
		// these formats are sent whole, as the edge does.
		r.Header.Del("Range")
		r.Header.Del("If-Range")
	}
	// ServeContent answers Range (PDF), If-None-Match, If-Modified-Since
	// and HEAD; contentWriter gives its errors the standard body.
	// f.Object, not f: the files store's *os.File itself, for sendfile.
	http.ServeContent(&contentWriter{ResponseWriter: w, r: r, ranges: ranges}, r, "", f.Image.CreatedAt.Truncate(time.Second), f.Object)
	return nil
}

func (h *Handler) open(ctx context.Context, id string, format imageparams.Format) (*rendition.File, error) {
	notFound := apierr.NotFound("Image not found")
	img, err := h.Service.Get(ctx, id)
	if errors.Is(err, rendition.ErrNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	o, err := h.Orgs.Get(ctx, img.OrgID)
	if err != nil || o.Suspended || img.StorageOnly {
		return nil, notFound // a storage-only image has no public URL
	}
	f, err := h.Service.OpenForGet(ctx, id, format)
	if errors.Is(err, rendition.ErrNotFound) {
		return nil, notFound
	}
	return f, err
}

// partial reports a request that may read a part of the file or none of
// it: a HEAD, a Range where ranges are served, a conditional GET. Its file
// is opened blob.Partial, so that the S3 store asks for what is sent
// (a HeadObject, a ranged GET) rather than the whole object.
func partial(r *http.Request, format imageparams.Format) bool {
	h := r.Header
	return r.Method == http.MethodHead || rangeFormats[format] && h.Get("Range") != "" ||
		h.Get("If-None-Match") != "" || h.Get("If-Modified-Since") != ""
}

var contentTypes = map[imageparams.Format]string{
	imageparams.FormatPNG:  "image/png",
	imageparams.FormatJPG:  "image/jpeg",
	imageparams.FormatWebP: "image/webp",
	imageparams.FormatPDF:  "application/pdf",
}

// rangeFormats are the formats whose bytes never change once made, the only
// ones a Range is served for.
var rangeFormats = map[imageparams.Format]bool{imageparams.FormatPDF: true}

// contentWriter sits between http.ServeContent and the client: ServeContent
// answers a failed precondition (412) or an unsatisfiable range (416) in
// plain text, which it turns into the standard body, and it advertises
// byte ranges only where they are served.
type contentWriter struct {
	http.ResponseWriter
	r      *http.Request
	ranges bool
	failed bool
}

func (cw *contentWriter) WriteHeader(code int) {
	h := cw.Header()
	if !cw.ranges {
		h.Del("Accept-Ranges")
	}
	if code < 400 {
		cw.ResponseWriter.WriteHeader(code)
		return
	}
	cw.failed = true
	msg := http.StatusText(code)
	switch code {
	case http.StatusRequestedRangeNotSatisfiable:
		msg = "The requested range is not satisfiable"
	case http.StatusPreconditionFailed:
		msg = "A precondition of the request (If-Match or If-Unmodified-Since) does not hold"
	}
	h.Set("Cache-Control", "no-store")
	apierr.Write(cw.ResponseWriter, cw.r, apierr.New(code, "%s", msg))
}

func (cw *contentWriter) Write(b []byte) (int, error) {
	if cw.failed {
		return len(b), nil // ServeContent's plain text, replaced
	}
	return cw.ResponseWriter.Write(b)
}

// ReadFrom hands ServeContent's copy of the body to the ResponseWriter's
// own ReadFrom (net/http's, which sends an *os.File with sendfile), and
// tells the Object how much of it the copy takes (blob.Limit: the S3
// store then GETs that range, not the rest of the object).
func (cw *contentWriter) ReadFrom(src io.Reader) (int64, error) {
	if cw.failed {
		return io.Copy(io.Discard, src)
	}
	if lr, ok := src.(*io.LimitedReader); ok {
		blob.Limit(lr.R, lr.N)
	}
	return io.Copy(cw.ResponseWriter, src)
}
