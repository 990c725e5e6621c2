package images

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/cursor"
	"github.com/pictorhq/pictor/origin/egress"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/rendition"
	"github.com/pictorhq/pictor/origin/usage"
)

// MaxBody bounds a creation request: the largest html and css plus room
// for every other field.
const MaxBody = imageparams.MaxHTMLBytes + imageparams.MaxCSSBytes + 1<<20

// Handler serves /v1/image and /v1/images.
type Handler struct {
	Service      *rendition.Service
	Orgs         *org.Store
	PublicURL    string
	AllowPrivate bool
	// Keys finds the key that signed a create-and-render URL.
	Keys SignerStore
	// Cursors signs list page tokens.
	Cursors cursor.Codec
	// Templates expands requests that name a template.
	Templates Templates
	// Proxies checks a request's proxy_id; nil refuses every proxy_id.
	Proxies ProxyChecker
	// Previews bounds each organization's previews (POST /v1/image/preview).
	Previews PreviewLimit
}

// ProxyChecker tells whether an organization may route a new image through
// one of its proxies: an *apierr.Error saying why not (the plan, an
// unknown or a disabled proxy), or nil.
type ProxyChecker interface {
	Check(ctx context.Context, o *org.Org, proxyID string) error
}

// Templates expands template requests into HTML requests.
type Templates interface {
	Expand(ctx context.Context, orgID string, obj *field.Object, pathID string, pathVersion int) (*field.Object, string, int, error)
	CountRenders(ctx context.Context, id string, version int, n int64) error
	Owner(ctx context.Context, id string) (string, error)
	// Variables names the variables of a template version: the names its
	// html and css read from the top level of template_values. A
	// template render refuses such a name sent beside template_values.
	Variables(ctx context.Context, orgID, id string, version int) ([]string, error)
	// ExpandDraft expands a preview request holding a template not saved
	// (under "template"): the expanded request, and the names the draft
	// reads from template_values.
	ExpandDraft(ctx context.Context, obj *field.Object) (*field.Object, []string, error)
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

// parseAny validates a creation request, expanding a template first when it
// names one (in the body or the path).
func (h *Handler) parseAny(ctx context.Context, o *org.Org, obj *field.Object, pathID string, pathVersion int) (parsed, *templateRef, error) {
	p, ref, err := h.parseAnyParams(ctx, o, obj, pathID, pathVersion)
	if err != nil {
		return p, ref, err
	}
	return p, ref, h.checkDelivery(ctx, o, obj.Prefix, &p)
}

// parseAnyParams is parseAny without the delivery options' checks (see
// checkDelivery).
func (h *Handler) parseAnyParams(ctx context.Context, o *org.Org, obj *field.Object, pathID string, pathVersion int) (parsed, *templateRef, error) {
	var ref *templateRef
	if pathID != "" || obj.Present("template_id") {
		if h.Templates == nil {
			return parsed{}, nil, apierr.NotFound("Templates are not available")
		}
		expanded, id, version, err := h.Templates.Expand(ctx, o.ID, obj, pathID, pathVersion)
		if err != nil {
			return parsed{}, nil, err
		}
		obj, ref = expanded, &templateRef{id: id, version: version}
	}
	p, err := h.parseParams(ctx, o, obj)
	return p, ref, err
}

// parsed is a validated creation request.
type parsed struct {
	imageparams.Params
	// storageOnly: its storage destination has hcti_storage_disabled.
	storageOnly bool
}

// parseParams validates creation parameters of an organization, except
// whether it may use the proxy and storage destination they name.
func (h *Handler) parseParams(ctx context.Context, o *org.Org, obj *field.Object) (parsed, error) {
	params, err := imageparams.Parse(obj, imageparams.Options{MaxWaitCap: o.PlanInfo().MaxWaitCap, RequireSource: true})
	if err != nil {
		return parsed{Params: params}, err
	}
	out := parsed{Params: params}
	return out, h.check(ctx, obj.Prefix, &out.Params)
}

// checkDelivery checks that the organization may send a new image through
// the proxy and to the storage destination its parameters name (the plan
// 403, an unknown one 404, a disabled one 400), and records whether the
// destination keeps no service copy. An existing image is served whatever
// became of them.
func (h *Handler) checkDelivery(ctx context.Context, o *org.Org, prefix string, p *parsed) error {
	if p.ProxyID != "" {
		if h.Proxies == nil {
			return apierr.Field(prefix+"proxy_id", "proxies are not available")
		}
		if err := h.Proxies.Check(ctx, o, p.ProxyID); err != nil {
			return err
		}
	}
	if p.StorageDestinationID != "" {
		only, err := h.Service.CheckDestination(ctx, o, p.StorageDestinationID)
		var ae *apierr.Error
		if errors.As(err, &ae) && ae.Status == http.StatusBadRequest && prefix != "" {
			err = apierr.Field(prefix+"storage_destination_id", "%s", ae.Message)
		}
		if err != nil {
			return err
		}
		p.storageOnly = only
	}
	return nil
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
		if float64(p.Viewport.Width)*scale > rendition.MaxSide || float64(p.Viewport.Height)*scale > rendition.MaxSide {
			return apierr.Field(prefix+"viewport_width", "times device_scale exceeds %d pixels; lower device_scale or set jumbo_max_width and jumbo_max_height", rendition.MaxSide)
		}
		if w, h := float64(p.Viewport.Width)*scale, float64(p.Viewport.Height)*scale; w*h > rendition.MaxPixels {
			return apierr.Field(prefix+"viewport_width", "times viewport_height and device_scale squared is %.0f megapixels; the limit is %d",
				w*h/1e6, rendition.MaxPixels/1_000_000)
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

// countRenders adds the images created from templates to their versions'
// render counts.
func (h *Handler) countRenders(ctx context.Context, created []rendition.Created, refs []*templateRef) {
	counts := map[templateRef]int64{}
	for i, c := range created {
		if i < len(refs) && refs[i] != nil && !c.Reused {
			counts[*refs[i]]++
		}
	}
	for ref, n := range counts {
		if err := h.Templates.CountRenders(ctx, ref.id, ref.version, n); err != nil {
			slog.Warn("count template renders", "template", ref.id, "error", err)
		}
	}
}

func (h *Handler) link(img *rendition.Image, explicitFormat bool) Link {
	if img.StorageOnly {
		return Link{URL: h.StoreURL(img.ID, img.Params.Format, explicitFormat), ID: img.ID}
	}
	return Link{URL: h.URL(img.ID, img.Params.Format, explicitFormat), ID: img.ID}
}

// StoreURL is the address that writes an image to its storage destination
// (PUT, with credentials of its organization): the URL of an image whose
// destination keeps no service copy.
func (h *Handler) StoreURL(id string, format imageparams.Format, explicit bool) string {
	u := strings.TrimRight(h.PublicURL, "/") + "/v1/store/" + id
	if explicit || format != imageparams.FormatPNG {
		u += "." + string(format)
	}
	return u
}

// URL is the public address of an image.
func (h *Handler) URL(id string, format imageparams.Format, explicit bool) string {
	u := strings.TrimRight(h.PublicURL, "/") + "/v1/image/" + id
	if explicit || format != imageparams.FormatPNG {
		u += "." + string(format)
	}
	return u
}

// writeCharge sets the x-renders-* headers of a creation.
func writeCharge(w http.ResponseWriter, c rendition.Charge) {
	if c.Allowed == 0 {
		return
	}
	h := w.Header()
	h.Set("x-renders-allowed", strconv.FormatInt(c.Allowed, 10))
	h.Set("x-renders-consumed", strconv.FormatInt(c.Consumed, 10))
	h.Set("x-renders-used", strconv.FormatInt(c.Used, 10))
}

// PlanError turns a refused charge into the 429 of compat.md.
func PlanError(err error) error {
	var le *usage.LimitError
	if errors.As(err, &le) {
		e := apierr.New(http.StatusTooManyRequests, "You've used %d of your %d image credits for this billing period (this request needs %d). Upgrade your plan or wait for the next billing period.", le.Used, le.Allowed, le.Wanted)
		e.Title = "Plan limit exceeded"
		return e
	}
	return err
}
