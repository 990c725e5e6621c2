package ogconfig

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/contract/ogplatform"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/respond"
)

// Refreshed is what reading one page again found.
type Refreshed struct {
	// Path is the page's path in its one spelling (NormalizePagePath).
	Path string
	// Identity names the page's card: a hash of everything its images are
	// made from (the resolved request, the configuration's revision,
	// content_version, the template version). It changes exactly when the
	// card does.
	Identity string
	// ImageID is the image the default platform is served (the one image
	// unless the configuration renders per platform, set_viewport); ""
	// when there is none yet (set_viewport, the default platform never
	// asked).
	ImageID string
	// Changed reports an identity other than the one recorded before (or
	// no record before): the edges drop what they hold of the page.
	Changed bool
	// Rendered reports that a new image was made and charged; an identity
	// that changed back to an earlier one reuses its image.
	Rendered bool
	// CheckedAt is when the page was read.
	CheckedAt time.Time
}

// Refresher reads a page of a configuration again now (package og's
// Service): unconditionally, through the same guarded reader as OG images,
// rendering only when the page's identity changed. A page that cannot be
// read or rendered leaves its record as it was: its current card keeps
// being served.
type Refresher interface {
	Refresh(ctx context.Context, c *Config, o *org.Org, path string) (Refreshed, error)
}

// RefreshView is the answer to a refresh of one page.
type RefreshView struct {
	Path string `json:"path"`
	// URL is the page's OG image URL, /v1/og/<domain_id><path>.
	URL       string  `json:"url"`
	Identity  string  `json:"identity"`
	ImageID   *string `json:"image_id"`
	Changed   bool    `json:"changed"`
	Rendered  bool    `json:"rendered"`
	CheckedAt string  `json:"checked_at"`
}

// RefreshAllView is the answer to a refresh of every page.
type RefreshAllView struct {
	Pages              string `json:"pages"` // "all"
	RefreshRequestedAt string `json:"refresh_requested_at"`
}

// maxRefreshBody bounds a refresh request: a path of 2 KiB, escaped in
// JSON, with room to spare.
const maxRefreshBody = 16 << 10

// MaxPagePath bounds a page path in its one spelling: the OG GET path's
// bound (ogplatform.NormalizePath), so that any path a refresh accepts is
// one a crawler can ask for.
const MaxPagePath = 2048

// NormalizePagePath validates a page path as a refresh names it and
// returns its one spelling, the OG GET path's (ogplatform.NormalizePath):
// "/post/1", percent-encoded or not ("/café" and "/caf%C3%A9" are one
// page). It must start with one "/" (no scheme, no host, no
// "//host/..."), hold no query or fragment, no control characters and
// valid escapes, and be at most MaxPagePath bytes once percent-encoded.
// The error is a field message for "path".
func NormalizePagePath(p string) (string, error) {
	switch {
	case p == "" || p[0] != '/':
		return "", errors.New("must be a page path starting with / (the part of the page's URL after base_url)")
	case strings.HasPrefix(p, "//"):
		return "", errors.New("must be a path on base_url, without a scheme or host")
	case strings.ContainsAny(p, "?#"):
		return "", errors.New("must be a path without a query or fragment: the query string plays no part in OG images")
	}
	n, err := ogplatform.NormalizePath(p)
	switch {
	case errors.Is(err, ogplatform.ErrPathTooLong):
		return "", errors.New("is longer than 2 KiB once percent-encoded")
	case err != nil:
		return "", errors.New("is not a valid page path: escapes must be %XX, no control characters, at most 2 KiB")
	}
	return n, nil
}

// parseRefresh reads a refresh request: the page's path in its one
// spelling, or "" for every page (no body, an empty form value, {} or a
// null path). JSON, multipart and URL-encoded bodies are read as for the
// configuration's own requests; unknown fields are ignored.
func parseRefresh(w http.ResponseWriter, r *http.Request) (string, error) {
	br := bufio.NewReaderSize(r.Body, 16)
	if _, err := br.Peek(1); errors.Is(err, io.EOF) {
		return "", nil
	}
	// A failed peek (a body too slow) is left to DecodeAny, whose read
	// fails the same way and is answered as any body error.
	r.Body = struct {
		io.Reader
		io.Closer
	}{br, r.Body}
	o, err := field.DecodeAny(w, r, maxRefreshBody)
	if err != nil {
		return "", err
	}
	var errs field.Errors
	p, ok := o.String(&errs, "path")
	if !ok || (o.IsForm() && p == "") {
		return "", errs.Err()
	}
	n, err := NormalizePagePath(p)
	if err != nil {
		return "", apierr.Field(o.Path("path"), "%s", err.Error())
	}
	return n, nil
}

// Refresh handles POST /v1/og-configs/{id}/refresh. With a path, the page
// is read now and its identity answered (200), rendering only when it
// changed; the edges drop the page's images when it did. Without one,
// every page of the configuration is read again at its next request, its
// current card served meanwhile, and the edges drop the configuration's
// images (202).
func (h *Handler) Refresh(w http.ResponseWriter, r *http.Request) error {
	p, id, err := routes.Target(r)
	if err != nil {
		return err
	}
	path, err := parseRefresh(w, r)
	if err != nil {
		return err
	}
	c, err := h.Store.Get(r.Context(), p.Org.ID, id)
	if err != nil {
		return storeError(err)
	}
	if c.Disabled {
		return apierr.New(http.StatusConflict, "OG configuration %s is disabled: its pages are not served; enable it first", c.ID)
	}
	if path == "" {
		return h.refreshAll(w, r, p.Org, c)
	}
	if h.Refresher == nil {
		return apierr.NotFound("OG pages cannot be refreshed here")
	}
	res, err := h.Refresher.Refresh(r.Context(), c, p.Org, path)
	if err != nil {
		return storeError(err)
	}
	if res.Changed && h.OnRefresh != nil {
		if err := h.OnRefresh(r.Context(), c, res.Path); err != nil {
			return err
		}
	}
	v := RefreshView{Path: res.Path, URL: h.PublicURL + contract.OGPrefix + c.DomainID + res.Path, Identity: res.Identity,
		Changed: res.Changed, Rendered: res.Rendered, CheckedAt: res.CheckedAt.UTC().Format(TimeFormat)}
	if res.ImageID != "" {
		v.ImageID = &res.ImageID
	}
	respond.JSON(w, r, http.StatusOK, v)
	return nil
}

// refreshAll marks every page of c for a recheck and has the edges drop
// its images, so that the next request of each page reaches the origin.
func (h *Handler) refreshAll(w http.ResponseWriter, r *http.Request, o *org.Org, c *Config) error {
	c, err := h.Store.RequestRefresh(r.Context(), o.ID, c.ID)
	if err != nil {
		return storeError(err)
	}
	if h.OnRefresh != nil {
		if err := h.OnRefresh(r.Context(), c, ""); err != nil {
			return err
		}
	}
	respond.JSON(w, r, http.StatusAccepted, RefreshAllView{Pages: "all", RefreshRequestedAt: c.RefreshRequestedAt.UTC().Format(TimeFormat)})
	return nil
}
