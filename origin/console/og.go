package console

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/imaging"
	"github.com/pictorhq/pictor/origin/contract/ogplatform"
	"github.com/pictorhq/pictor/origin/ogconfig"
	"github.com/pictorhq/pictor/origin/perm"
)

// The OG crawler preview: a page of a configuration's site as each
// crawler's platform sees it. The metadata comes from GET
// /v1/og-configs/{id}/preview; each card is GET /v1/og/{domain_id}{path}
// run in-process with that platform's User-Agent (ogCard), so that it
// costs and is limited as that crawler's own visit.

// platformLabels are the names a person knows the platforms by; a
// platform missing here is shown by its name.
var platformLabels = map[string]string{
	"default": "Other clients", "facebook": "Facebook", "twitter": "X (Twitter)", "linkedin": "LinkedIn",
	"slack": "Slack", "discord": "Discord", "telegram": "Telegram", "whatsapp": "WhatsApp", "pinterest": "Pinterest",
	"mastodon": "Mastodon", "bluesky": "Bluesky", "apple": "iMessage (Apple)", "reddit": "Reddit", "instagram": "Instagram",
}

func platformLabel(name string) string {
	if l, ok := platformLabels[name]; ok {
		return l
	}
	return name
}

type ogPreviewData struct {
	ID, Name, BaseURL string
	Path              string // as typed
	Asked             bool   // a path was sent
	PathError         string
	Denied, Refused   string
	Preview           *ogconfig.PreviewView
	Cards             []ogCardView
	Meta              string // the tags to paste
}

type ogCardView struct {
	Label, Src, UserAgent string
	Width, Height         int
}

// ogPreview shows the preview form of a configuration and, for a path,
// the page's metadata, each platform's card and the tags to paste.
func (c *Console) ogPreview(w http.ResponseWriter, r *http.Request, st *state) {
	id := r.PathValue("id")
	q := r.URL.Query()
	d := ogPreviewData{ID: id, Path: q.Get("path"), Asked: q.Has("path")}
	status := http.StatusOK
	var cfg struct {
		Name     string `json:"name"`
		BaseURL  string `json:"base_url"`
		DomainID string `json:"domain_id"`
	}
	err := c.call(r, st, http.MethodGet, "/v1/og-configs/"+url.PathEscape(id), nil, &cfg)
	var ae *apiError
	switch {
	case isStatus(err, http.StatusForbidden) && !st.principal.Grant.Has(perm.OGConfigsRead):
		d.Denied = lacks(perm.OGConfigsRead)
		d.Asked = false
	case err != nil:
		c.failed(w, r, st, err)
		return
	}
	d.Name, d.BaseURL = cfg.Name, cfg.BaseURL
	if d.Asked {
		var pv ogconfig.PreviewView
		err := c.call(r, st, http.MethodGet, "/v1/og-configs/"+url.PathEscape(id)+"/preview?path="+url.QueryEscape(d.Path), nil, &pv)
		switch {
		case errors.As(err, &ae) && ae.field("path") != "":
			d.PathError, status = ae.field("path"), ae.Status
		case errors.As(err, &ae) && ae.Status < 500:
			d.Refused, status = strings.TrimSpace(ae.Message), ae.Status
			if ae.RetryAfter != "" {
				w.Header().Set("Retry-After", ae.RetryAfter)
			}
		case err != nil:
			c.failed(w, r, st, err)
			return
		default:
			d.Preview = &pv
			for _, card := range pv.Cards {
				d.Cards = append(d.Cards, ogCardView{Label: platformLabel(card.Platform), UserAgent: card.UserAgent, Width: card.Width, Height: card.Height,
					Src: "/console/og/cards/" + url.PathEscape(cfg.DomainID) + "/" + url.PathEscape(card.Platform) + "?path=" + url.QueryEscape(pv.Path)})
			}
			u := template.HTMLEscapeString(pv.URL)
			d.Meta = fmt.Sprintf("<meta property=\"og:image\" content=\"%s\">\n<meta name=\"twitter:card\" content=\"summary_large_image\">\n<meta name=\"twitter:image\" content=\"%s\">", u, u)
		}
	}
	c.render(w, r, status, "ogpreview", page{Title: "OG preview", Data: d, state: st})
}

// ogCard answers the card a platform's crawler gets for a page: GET
// /v1/og/{domain_id}{path} run in-process with the platform's User-Agent
// and the person's own address, so that it is admitted, limited and
// charged as that crawler's visit would be. An image the edge would fit
// to the platform's size (post_process) is fitted the same way here, as
// many at once as there are CPUs (the edge bounds its own the same way). A
// refusal is an SVG of the platform's size saying why, with the route's
// status, so that the page's <img> shows it.
func (c *Console) ogCard(w http.ResponseWriter, r *http.Request, st *state) {
	pl, ok := ogplatform.ByName(r.PathValue("crawler"))
	if !ok {
		cardError(w, http.StatusNotFound, ogplatform.Default, "No crawler has this name.")
		return
	}
	path, err := ogconfig.PreviewPath(r.URL.Query().Get("path"))
	if err != nil {
		cardError(w, http.StatusBadRequest, pl, "The path "+err.Error()+".")
		return
	}
	target := contract.OGPrefix + url.PathEscape(r.PathValue("domain_id")) + path
	rec, err := c.serve(r, st, http.MethodGet, target, nil, http.Header{"User-Agent": {pl.UserAgent}})
	var ae *apiError
	if errors.As(err, &ae) {
		if ae.RetryAfter != "" {
			w.Header().Set("Retry-After", ae.RetryAfter)
		}
		cardError(w, ae.Status, pl, strings.TrimSpace(ae.Message))
		return
	}
	if err != nil {
		c.cfg.Logger.ErrorContext(r.Context(), "console OG card failed", "error", err)
		cardError(w, http.StatusServiceUnavailable, pl, "The card cannot be made right now. Try again in a moment.")
		return
	}
	body, ct := rec.body.Bytes(), rec.header.Get("Content-Type")
	if rec.header.Get(contract.HeaderOGMode) == contract.OGFit {
		select {
		case c.fits <- struct{}{}:
		case <-r.Context().Done():
			return
		}
		body, err = fitCard(r.Context(), body, pl, rec.header.Get(contract.HeaderOGScale))
		<-c.fits
		if err != nil {
			c.cfg.Logger.ErrorContext(r.Context(), "console OG card fit failed", "error", err)
			cardError(w, http.StatusBadGateway, pl, "The card could not be fitted to this crawler's size.")
			return
		}
		ct = imaging.PNG.ContentType()
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// fitCard fits the origin's one image into the platform's size times the
// scale it was rendered at, as the edge does for post_process: scaled to
// cover it and cropped around the centre.
func fitCard(ctx context.Context, body []byte, pl ogplatform.Platform, scale string) ([]byte, error) {
	w, h := pl.Width, pl.Height
	if f, err := strconv.ParseFloat(strings.TrimSpace(scale), 64); err == nil && f > 0 && !math.IsInf(f, 0) {
		sw, sh := int(math.Round(float64(w)*f)), int(math.Round(float64(h)*f))
		if sw >= 1 && sh >= 1 && sw <= imaging.MaxSize && sh <= imaging.MaxSize {
			w, h = sw, sh
		}
	}
	return imaging.Apply(ctx, body, imaging.Options{Width: w, Height: h}, imaging.PNG)
}

// cardError answers an SVG of the platform's size with message, wrapped
// in lines, under status.
func cardError(w http.ResponseWriter, status int, pl ogplatform.Platform, message string) {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`, pl.Width, pl.Height, pl.Width, pl.Height)
	b.WriteString(`<rect width="100%" height="100%" fill="#f4f4f5" stroke="#b91c1c" stroke-width="8"/>`)
	lines := wrap(message, 44)
	y := pl.Height/2 - len(lines)*26
	fmt.Fprintf(&b, `<text x="50%%" y="%d" text-anchor="middle" font-family="sans-serif" font-size="40" fill="#7f1d1d">`, y)
	for i, l := range lines {
		dy := "0"
		if i > 0 {
			dy = "1.3em"
		}
		fmt.Fprintf(&b, `<tspan x="50%%" dy="%s">%s</tspan>`, dy, template.HTMLEscapeString(l))
	}
	b.WriteString(`</text></svg>`)
	w.Header().Set("Content-Type", "image/svg+xml")
	w.WriteHeader(status)
	w.Write([]byte(b.String()))
}

// wrap cuts s into lines of about width runes at spaces.
func wrap(s string, width int) []string {
	var lines []string
	var cur []string
	n := 0
	for _, word := range strings.Fields(s) {
		if n > 0 && n+1+len([]rune(word)) > width {
			lines = append(lines, strings.Join(cur, " "))
			cur, n = nil, 0
		}
		if n > 0 {
			n++
		}
		cur = append(cur, word)
		n += len([]rune(word))
	}
	if len(cur) > 0 {
		lines = append(lines, strings.Join(cur, " "))
	}
	return lines
}
