package image

import (
	"context"
	"errors"
	"github.com/pictorhq/pictor/origin/contract"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/cursor"
	"github.com/pictorhq/pictor/origin/egress"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/respond"
	"github.com/pictorhq/pictor/origin/usage"
)

// MaxBody bounds a creation request: the largest html and css plus room
// for every other field.
const MaxBody = imageparams.MaxHTMLBytes + imageparams.MaxCSSBytes + 1<<20

// Handler serves /v1/image and /v1/images.
type Handler struct {
	Service      *Service
	Orgs         *org.Store
	PublicURL    string
	AllowPrivate bool
	// Keys finds the key that signed a create-and-render URL.
	Keys SignerStore
	// Cursors signs list page tokens.
	Cursors cursor.Codec
	// Templates expands requests that name a template.
	Templates Templates
}

// Templates expands template requests into HTML requests.
type Templates interface {
	Expand(ctx context.Context, orgID string, obj *field.Object, pathID string, pathVersion int) (*field.Object, string, int, error)
	CountRenders(id string, version int, n int64) error
	Owner(id string) (string, error)
}

// templateRef names the template version an image came from.
type templateRef struct {
	id      string
	version int
}

// Link is an image in API answers.
type Link struct {
	URL string `json:"url"`
	ID  string `json:"id"`
}

// Create handles POST /v1/image, POST /v1/image/{template_id} and
// POST /v1/image/{template_id}/{template_version}.
func (h *Handler) Create(w http.ResponseWriter, r *http.Request) {
	p := auth.FromContext(r.Context())
	o, err := field.DecodeAny(w, r, MaxBody)
	if err != nil {
		apierr.Write(w, r, err)
		return
	}
	pathVersion := 0
	if v := r.PathValue("template_version"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			apierr.Write(w, r, apierr.Field("template_version", "must be a positive integer"))
			return
		}
		pathVersion = n
	}
	params, ref, err := h.parseAny(r.Context(), p.Org, o, r.PathValue("template_id"), pathVersion)
	if err != nil {
		apierr.Write(w, r, err)
		return
	}
	var dedupe time.Duration
	if ref == nil {
		if dedupe, err = dedupeWindow(p.Org, &params); err != nil {
			apierr.Write(w, r, err)
			return
		}
	}
	created, charge, err := h.Service.Create(r.Context(), p.Org, []Item{{Params: params, Dedupe: dedupe}})
	writeCharge(w, charge)
	if err != nil {
		apierr.Write(w, r, planError(err))
		return
	}
	h.countRenders(created, []*templateRef{ref})
	respond.JSON(w, r, http.StatusOK, h.link(created[0].Image, o.Present("format")))
}

// parseAny validates a creation request, expanding a template first when it
// names one (in the body or the path).
func (h *Handler) parseAny(ctx context.Context, o *org.Org, obj *field.Object, pathID string, pathVersion int) (imageparams.Params, *templateRef, error) {
	var ref *templateRef
	if pathID != "" || obj.Present("template_id") {
		if h.Templates == nil {
			return imageparams.Params{}, nil, apierr.NotFound("Templates are not available")
		}
		expanded, id, version, err := h.Templates.Expand(ctx, o.ID, obj, pathID, pathVersion)
		if err != nil {
			return imageparams.Params{}, nil, err
		}
		obj, ref = expanded, &templateRef{id: id, version: version}
	}
	params, err := h.parse(ctx, o, obj)
	return params, ref, err
}

// countRenders adds the images created from templates to their versions'
// render counts.
func (h *Handler) countRenders(created []Created, refs []*templateRef) {
	counts := map[templateRef]int64{}
	for i, c := range created {
		if i < len(refs) && refs[i] != nil && !c.Reused {
			counts[*refs[i]]++
		}
	}
	for ref, n := range counts {
		if err := h.Templates.CountRenders(ref.id, ref.version, n); err != nil {
			slog.Warn("count template renders", "template", ref.id, "error", err)
		}
	}
}

// parse validates creation parameters of an organization.
func (h *Handler) parse(ctx context.Context, o *org.Org, obj *field.Object) (imageparams.Params, error) {
	params, err := imageparams.Parse(obj, imageparams.Options{MaxWaitCap: o.PlanInfo().MaxWaitCap, RequireSource: true})
	if err != nil {
		return params, err
	}
	return params, h.check(ctx, obj.Prefix, &params)
}

func (h *Handler) link(img *Image, explicitFormat bool) Link {
	return Link{URL: h.URL(img.ID, img.Params.Format, explicitFormat), ID: img.ID}
}

// writeCharge sets the x-renders-* headers of a creation.
func writeCharge(w http.ResponseWriter, c Charge) {
	if c.Allowed == 0 {
		return
	}
	h := w.Header()
	h.Set("x-renders-allowed", strconv.FormatInt(c.Allowed, 10))
	h.Set("x-renders-consumed", strconv.FormatInt(c.Consumed, 10))
	h.Set("x-renders-used", strconv.FormatInt(c.Used, 10))
}

// planError turns a refused charge into the 429 of compat.md.
func planError(err error) error {
	var le *usage.LimitError
	if errors.As(err, &le) {
		e := apierr.New(http.StatusTooManyRequests, "You've used %d of your %d image credits for this billing period (this request needs %d). Upgrade your plan or wait for the next billing period.", le.Used, le.Allowed, le.Wanted)
		e.Title = "Plan limit exceeded"
		return e
	}
	return err
}

// dedupeWindow applies the dedupe rules of compat.md to a single creation.
func dedupeWindow(o *org.Org, p *imageparams.Params) (time.Duration, error) {
	pl := o.PlanInfo()
	def := pl.DedupeHTMLDefault
	if p.Kind() == imageparams.KindURL {
		def = 0
	}
	if p.DedupeDurationS == nil {
		return def, nil
	}
	d := time.Duration(*p.DedupeDurationS) * time.Second
	switch {
	case d == 0:
		return 0, nil
	case pl.DedupeHTMLFixed && d != pl.DedupeHTMLDefault:
		return 0, apierr.Field("dedupe_duration_s", "must be 0 or %d on the %s plan", int(pl.DedupeHTMLDefault/time.Second), pl.Name)
	case d > pl.DedupeHTMLMax:
		return 0, apierr.Field("dedupe_duration_s", "must be at most %d on the %s plan", int(pl.DedupeHTMLMax/time.Second), pl.Name)
	}
	return d, nil
}

// check applies the rules that need more than one field or the server's
// configuration. prefix is the error path prefix (batch variations).
func (h *Handler) check(ctx context.Context, prefix string, p *imageparams.Params) error {
	switch p.Kind() {
	case imageparams.KindTemplate: // expanded before parsing; left only when unknown
		return apierr.NotFound("Template %s not found", p.TemplateID)
	case imageparams.KindURL:
		// Literal addresses and local names are refused now; names that
		// need DNS are checked by the egress at render time.
		_, err := egress.CheckURL(ctx, literalsOnly{}, p.URL, h.AllowPrivate)
		if errors.Is(err, egress.ErrBlockedAddress) {
			return apierr.Field(prefix+"url", "is not allowed: %v", err)
		}
	}
	if p.Viewport != nil && p.Jumbo == nil {
		scale := p.DeviceScale()
		if float64(p.Viewport.Width)*scale > MaxSide || float64(p.Viewport.Height)*scale > MaxSide {
			return apierr.Field(prefix+"viewport_width", "times device_scale exceeds %d pixels; lower device_scale or set jumbo_max_width and jumbo_max_height", MaxSide)
		}
		if w, h := float64(p.Viewport.Width)*scale, float64(p.Viewport.Height)*scale; w*h > MaxPixels {
			return apierr.Field(prefix+"viewport_width", "times viewport_height and device_scale squared is %.0f megapixels; the limit is %d",
				w*h/1e6, MaxPixels/1_000_000)
		}
	}
	return nil
}

// literalsOnly is a resolver that resolves nothing, for checks that must
// not wait on DNS.
type literalsOnly struct{}

func (literalsOnly) LookupIPAddr(context.Context, string) ([]net.IPAddr, error) {
	return nil, errors.New("not resolved at creation")
}

// URL is the public address of an image.
func (h *Handler) URL(id string, format imageparams.Format, explicit bool) string {
	u := strings.TrimRight(h.PublicURL, "/") + "/v1/image/" + id
	if explicit || format != imageparams.FormatPNG {
		u += "." + string(format)
	}
	return u
}

var contentTypes = map[imageparams.Format]string{
	imageparams.FormatPNG:  "image/png",
	imageparams.FormatJPG:  "image/jpeg",
	imageparams.FormatWebP: "image/webp",
	imageparams.FormatPDF:  "application/pdf",
}

// ParsePath splits "<id>[.ext]" into a valid image id and its format.
func ParsePath(seg string) (string, imageparams.Format, bool) {
	id, ext, hasExt := strings.Cut(seg, ".")
	format := imageparams.FormatPNG
	if hasExt {
		switch strings.ToLower(ext) {
		case "png":
		case "jpg", "jpeg":
			format = imageparams.FormatJPG
		case "webp":
			format = imageparams.FormatWebP
		case "pdf":
			format = imageparams.FormatPDF
		default:
			return "", "", false
		}
	}
	u, err := uuid.Parse(id)
	if err != nil || len(id) != 36 {
		return "", "", false
	}
	return u.String(), format, true
}

// Get handles GET /v1/image/{id}[.ext]: public, the unguessable id is the
// capability, valid while its organization is active.
func (h *Handler) Get(w http.ResponseWriter, r *http.Request) {
	id, format, ok := ParsePath(r.PathValue("id"))
	if !ok {
		apierr.Write(w, r, apierr.NotFound("Image not found"))
		return
	}
	h.serve(w, r, id, format)
}

// serve answers with the image's file in the format.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, id string, format imageparams.Format) {
	f, err := h.open(r.Context(), id, format)
	if err != nil {
		w.Header().Set("Cache-Control", "no-store")
		apierr.Write(w, r, err)
		return
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
	http.ServeContent(&contentWriter{ResponseWriter: w, r: r, ranges: ranges}, r, "", f.Image.CreatedAt.Truncate(time.Second), f)
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

func (h *Handler) open(ctx context.Context, id string, format imageparams.Format) (*File, error) {
	notFound := apierr.NotFound("Image not found")
	img, err := h.Service.Get(id)
	if errors.Is(err, ErrNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	o, err := h.Orgs.Get(img.OrgID)
	if err != nil || o.Suspended {
		return nil, notFound
	}
	f, err := h.Service.Open(ctx, id, format)
	if errors.Is(err, ErrNotFound) {
		return nil, notFound
	}
	return f, err
}
