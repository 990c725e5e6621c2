package ogconfig

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/ogplatform"
	"github.com/pictorhq/pictor/origin/ogpage"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/respond"
)

// PagePreview is what a read of one page for a preview found.
type PagePreview struct {
	// Path is the page's path in its one spelling.
	Path string
	// Head is what the page's <head> says.
	Head ogpage.Head
}

// Previewer reads a page of a configuration for a preview (package og's
// Service): through the same guarded reader as OG images, admitted by the
// client address's allowance as a crawler's read of a new page is. It
// stores nothing, renders nothing and charges nothing.
type Previewer interface {
	Preview(ctx context.Context, c *Config, o *org.Org, path, client string) (PagePreview, error)
}

// PreviewView is the answer to a preview of one page.
type PreviewView struct {
	Path string `json:"path"`
	// PageURL is the page read: base_url and the path.
	PageURL string `json:"page_url"`
	// URL is the page's OG image URL, /v1/og/<domain_id><path>: what every
	// crawler asks for, each getting its platform's card.
	URL              string           `json:"url"`
	OptimizationMode OptimizationMode `json:"optimization_mode"`
	Metadata         MetadataView     `json:"metadata"`
	// Overrides are the page's valid render overrides (hcti: or pictor:).
	Overrides map[string]string `json:"overrides"`
	// TemplateValues are the page's html:tv: values.
	TemplateValues map[string]json.RawMessage `json:"template_values"`
	Ignored        []IgnoredView              `json:"ignored"`
	IgnoredMore    int                        `json:"ignored_more"`
	Cards          []CardView                 `json:"cards"`
}

// MetadataView is what the page's head says of itself.
type MetadataView struct {
	Title              string `json:"title"`
	Description        string `json:"description"`
	OGTitle            string `json:"og_title"`
	OGDescription      string `json:"og_description"`
	OGSiteName         string `json:"og_site_name"`
	OGURL              string `json:"og_url"`
	OGImage            string `json:"og_image"`
	TwitterTitle       string `json:"twitter_title"`
	TwitterDescription string `json:"twitter_description"`
}

// IgnoredView is a meta of the page that was not used, and why.
type IgnoredView struct {
	Key    string `json:"key"`
	Reason string `json:"reason"`
}

// CardView is what one crawler's platform gets for the page.
type CardView struct {
	Platform  string `json:"platform"`
	Width     int    `json:"width"`
	Height    int    `json:"height"`
	UserAgent string `json:"user_agent"`
}

// PreviewPath validates the path of a preview: a page path as a refresh
// names it (NormalizePagePath), and, since a person types it, without
// dot segments, which would name another page than the one written. The
// error is a field message for "path".
func PreviewPath(p string) (string, error) {
	if p == "" {
		return "", errors.New("is required: the path of a page on base_url, such as /blog/post-1")
	}
	if strings.Contains(p, "://") {
		return "", errors.New("must be a path on base_url, not a URL: write /blog/post-1 rather than https://www.example.com/blog/post-1")
	}
	n, err := NormalizePagePath(p)
	if err != nil {
		return "", err
	}
	for seg := range strings.SplitSeq(p, "/") {
		if dec, err := url.PathUnescape(seg); err == nil && (dec == "." || dec == "..") {
			return "", errors.New("must not hold . or .. segments: write the page's own path")
		}
	}
	return n, nil
}

// Preview handles GET /v1/og-configs/{id}/preview?path=: the page is read
// now, as a crawler's request for a new path reads it (the same guard,
// the same allowance of the client address), and what its head says is
// answered with the card each platform gets: the page's OG image URL
// asked with that platform's User-Agent. Nothing is stored, rendered or
// charged.
func (h *Handler) Preview(w http.ResponseWriter, r *http.Request) error {
	p, id, err := routes.Target(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	if len(q["path"]) > 1 {
		return apierr.Field("path", "must be given once")
	}
	path, err := PreviewPath(q.Get("path"))
	if err != nil {
		return apierr.Field("path", "%s", err.Error())
	}
	c, err := h.Store.Get(r.Context(), p.Org.ID, id)
	if err != nil {
		return storeError(err)
	}
	if c.Disabled {
		return apierr.New(http.StatusConflict, "OG configuration %s is disabled: its pages are not served; enable it first", c.ID)
	}
	if h.Previewer == nil {
		return apierr.NotFound("OG pages cannot be previewed here")
	}
	client := "-" // no address: one allowance for all such requests, as for OG images
	if a, ok := contract.ClientAddr(r.Header.Get(contract.HeaderForwardedFor), r.RemoteAddr); ok {
		client = contract.ClientKey(a)
	}
	pv, err := h.Previewer.Preview(r.Context(), c, p.Org, path, client)
	if err != nil {
		return storeError(err)
	}
	respond.JSON(w, r, http.StatusOK, previewView(c, pv, h.PublicURL))
	return nil
}

func previewView(c *Config, pv PagePreview, publicURL string) PreviewView {
	hd := pv.Head
	v := PreviewView{Path: pv.Path, PageURL: c.BaseURL + pv.Path, URL: publicURL + contract.OGPrefix + c.DomainID + pv.Path,
		OptimizationMode: c.OptimizationMode,
		Metadata: MetadataView{Title: hd.Title, Description: hd.Description, OGTitle: hd.OGTitle, OGDescription: hd.OGDescription,
			OGSiteName: hd.OGSiteName, OGURL: hd.OGURL, OGImage: hd.OGImage, TwitterTitle: hd.TwitterTitle, TwitterDescription: hd.TwitterDescription},
		Overrides: map[string]string{}, TemplateValues: map[string]json.RawMessage{}, Ignored: []IgnoredView{}, IgnoredMore: hd.IgnoredMore}
	for k, val := range hd.Overrides {
		v.Overrides[k] = val
	}
	for k, val := range hd.TemplateValues {
		v.TemplateValues[k] = val
	}
	for _, ig := range hd.Ignored {
		v.Ignored = append(v.Ignored, IgnoredView{Key: ig.Key, Reason: ig.Reason})
	}
	for _, pl := range ogplatform.All {
		v.Cards = append(v.Cards, CardView{Platform: pl.Name, Width: pl.Width, Height: pl.Height, UserAgent: pl.UserAgent})
	}
	return v
}
