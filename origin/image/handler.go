package image

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/pictorhq/pictor/origin/apierr"
	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/egress"
	"github.com/pictorhq/pictor/origin/field"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/respond"
)

// MaxBody bounds a creation request: the largest html and css plus room
// for every other field.
const MaxBody = imageparams.MaxHTMLBytes + imageparams.MaxCSSBytes + 1<<20

// Handler serves /v1/image.
type Handler struct {
	Service      *Service
	PublicURL    string
	AllowPrivate bool
}

// Created is the answer to a creation.
type Created struct {
	URL string `json:"url"`
	ID  string `json:"id"`
}

// Create handles POST /v1/image.
func (h *Handler) Create(w http.ResponseWriter, r *http.Request) {
	p := auth.FromContext(r.Context())
	o, err := field.DecodeAny(w, r, MaxBody)
	if err != nil {
		apierr.Write(w, r, err)
		return
	}
	plan := p.Org.PlanInfo()
	params, err := imageparams.Parse(o, imageparams.Options{MaxWaitCap: plan.MaxWaitCap, RequireSource: true})
	if err != nil {
		apierr.Write(w, r, err)
		return
	}
	if err := h.check(r.Context(), &params); err != nil {
		apierr.Write(w, r, err)
		return
	}
	img, err := h.Service.Create(r.Context(), p.Org.ID, params, plan.MaxWaitCap)
	if err != nil {
		apierr.Write(w, r, err)
		return
	}
	respond.JSON(w, r, http.StatusOK, Created{URL: h.URL(img.ID, params.Format, o.Present("format")), ID: img.ID})
}

// check applies the rules that need more than one field or the server's
// configuration.
func (h *Handler) check(ctx context.Context, p *imageparams.Params) error {
	switch p.Kind() {
	case imageparams.KindTemplate:
		return apierr.NotFound("Template %s not found", p.TemplateID)
	case imageparams.KindURL:
		// Literal addresses and local names are refused now; names that
		// need DNS are checked by the egress at render time.
		_, err := egress.CheckURL(ctx, literalsOnly{}, p.URL, h.AllowPrivate)
		if errors.Is(err, egress.ErrBlockedAddress) {
			return apierr.Field("url", "is not allowed: %v", err)
		}
	}
	if p.Viewport != nil && p.Jumbo == nil {
		scale := p.DeviceScale()
		if float64(p.Viewport.Width)*scale > MaxSide || float64(p.Viewport.Height)*scale > MaxSide {
			return apierr.Field("viewport_width", "times device_scale exceeds %d pixels; lower device_scale or set jumbo_max_width and jumbo_max_height", MaxSide)
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
// capability.
func (h *Handler) Get(w http.ResponseWriter, r *http.Request) {
	id, format, ok := ParsePath(r.PathValue("id"))
	if !ok {
		apierr.Write(w, r, apierr.NotFound("Image not found"))
		return
	}
	f, err := h.Service.Open(r.Context(), id, format)
	if errors.Is(err, ErrNotFound) {
		err = apierr.NotFound("Image not found")
	}
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
	// ServeContent answers Range, If-None-Match, If-Modified-Since and HEAD.
	http.ServeContent(w, r, "", f.Image.CreatedAt.Truncate(time.Second), f)
}
