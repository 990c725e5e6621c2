package og

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/contract/ogplatform"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/ogconfig"
	"github.com/pictorhq/pictor/origin/ogpage"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/rendition"
)

// resolved is the image creation request a page comes to, as JSON and as
// parameters (nil when it breaks a rule), and what else names its image.
type resolved struct {
	request json.RawMessage
	params  *imageparams.Params
	extra   string
}

// resolve lays the page's overrides over the configuration's options and
// adds the source: the page itself (html_css) or the template evaluated
// with the page's values (templated). Without extract_values, the page's
// head counts for nothing.
func (s *Service) resolve(ctx context.Context, cfg *ogconfig.Config, o *org.Org, pageURL string, head *ogpage.Head) (*resolved, error) {
	m := make(map[string]json.RawMessage, len(cfg.DefaultOptions)+4)
	for k, v := range cfg.DefaultOptions {
		m[k] = v
	}
	var contentVersion int64
	values := map[string]json.RawMessage{}
	if cfg.ExtractValues && head != nil {
		for k, v := range head.Overrides {
			if k == "content_version" {
				continue
			}
			// As a string: Parse reads numbers and booleans from strings.
			m[k], _ = json.Marshal(v)
		}
		if head.ContentVersion != nil {
			contentVersion = *head.ContentVersion
		}
		for _, mp := range cfg.Mapping {
			var v string
			if mp.MetaKey != "" {
				v = head.Meta[strings.ToLower(mp.MetaKey)]
			} else {
				v = head.Fallback(string(mp.Fallback))
			}
			if v != "" {
				values[mp.TemplateKey], _ = json.Marshal(v)
			}
		}
		for k, v := range head.TemplateValues { // html:tv: beats the mapping
			values[k] = v
		}
		for _, ig := range head.Ignored {
			s.log.InfoContext(ctx, "OG page metadata ignored", "config_id", cfg.ID, "url", pageURL, "key", ig.Key, "reason", ig.Reason)
		}
	}
	// OG images are the platform's pixels: 1200×630 at scale 1 unless the
	// configuration or the page says otherwise.
	if _, ok := m["viewport_width"]; !ok {
		m["viewport_width"] = json.RawMessage(strconv.Itoa(ogplatform.Default.Width))
	}
	if _, ok := m["viewport_height"]; !ok {
		m["viewport_height"] = json.RawMessage(strconv.Itoa(ogplatform.Default.Height))
	}
	if _, ok := m["device_scale"]; !ok {
		m["device_scale"] = json.RawMessage("1")
	}
	templateVersion := 0
	obj := field.FromJSON(m)
	switch cfg.ConfigType {
	case ogconfig.Templated:
		raw, _ := json.Marshal(values)
		m["template_values"] = raw
		expanded, _, version, err := s.cfg.Templates.Expand(ctx, o.ID, obj, cfg.TemplateID, cfg.TemplateVersion)
		if err != nil {
			return nil, err
		}
		obj, templateVersion = expanded, version
	default:
		m["url"], _ = json.Marshal(pageURL)
		// The page is loaded again by the render: with the same headers,
		// to the same origins, as when it was read.
		if len(cfg.Headers) > 0 {
			m["headers"], _ = json.Marshal(cfg.Headers)
		}
		if len(cfg.AdditionalHeaderOrigins) > 0 {
			m["additional_header_origins"], _ = json.Marshal(cfg.AdditionalHeaderOrigins)
		}
	}
	request, err := objectJSON(obj)
	if err != nil {
		return nil, err
	}
	return &resolved{
		request: request,
		params:  requestParams(request),
		extra:   fmt.Sprintf("og\x00%s\x00%d\x00%d\x00%d", cfg.ID, cfg.Revision, contentVersion, templateVersion),
	}, nil
}

// objectJSON writes a request object as one JSON object.
func objectJSON(o *field.Object) (json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	for _, k := range o.Keys() {
		if o.IsForm() {
			vs := o.FormValues(k)
			if len(vs) == 0 {
				continue
			}
			m[k], _ = json.Marshal(vs[len(vs)-1])
			continue
		}
		if raw, ok := o.Raw(k); ok {
			m[k] = raw
		}
	}
	return json.Marshal(m)
}

// requestParams parses a resolved request once, when it is resolved (or
// read from a record that predates Params): the parameters, or nil when
// the request breaks a rule. The plan's cap on max_wait_ms is not applied
// here: it is the organization's plan at each render (item).
func requestParams(request json.RawMessage) *imageparams.Params {
	obj, err := field.ParseJSON(request)
	if err != nil {
		return nil
	}
	p, err := imageparams.Parse(obj, imageparams.Options{RequireSource: true})
	if err != nil {
		return nil
	}
	return &p
}

// parseRequest parses a resolved request under the plan's cap on
// max_wait_ms, for the error that names what breaks a rule.
func parseRequest(request json.RawMessage, maxWaitCap time.Duration) (imageparams.Params, error) {
	obj, err := field.ParseJSON(request)
	if err != nil {
		return imageparams.Params{}, fmt.Errorf("stored OG request: %w", err)
	}
	p, err := imageparams.Parse(obj, imageparams.Options{MaxWaitCap: maxWaitCap, RequireSource: true})
	if err != nil {
		// The page's overrides were checked one by one; together with the
		// configuration's options they can still break a rule (a viewport
		// over the pixel limit): the site owner's to fix.
		return imageparams.Params{}, apierr.BadRequest("The page's OG settings make an invalid image: %s", apierr.From(err).Message)
	}
	return p, nil
}

// item is the image of a variant of a resolved page: its parameters, with
// the platform's viewport when the configuration renders once per
// platform, and its content id. The page's Params are taken as they are
// when within the plan's cap on max_wait_ms (the plan may have changed
// since the page was read); otherwise its request is parsed again, for the
// error naming every field it breaks.
func (s *Service) item(cfg *ogconfig.Config, o *org.Org, pg *page, variant string) (rendition.Item, error) {
	maxWait := o.PlanInfo().MaxWaitCap
	var p imageparams.Params
	if sp := pg.Params; sp != nil && (maxWait.Milliseconds() <= 0 || sp.MaxWait.Milliseconds() <= maxWait.Milliseconds()) {
		p = *sp // a copy: the viewport below is this item's
	} else {
		var err error
		if p, err = parseRequest(pg.Request, maxWait); err != nil {
			return rendition.Item{}, err
		}
	}
	extra := pg.Extra
	if cfg.OptimizationMode == ogconfig.SetViewport {
		pl, ok := ogplatform.ByName(variant)
		if !ok {
			pl = ogplatform.Default
		}
		p.Viewport = &imageparams.Size{Width: pl.Width, Height: pl.Height}
	}
	return rendition.Item{Params: p, ID: rendition.ContentID(o.ID, &p, extra+"\x00"+variant)}, nil
}

// variant names the image a platform gets: its own with set_viewport, the
// one image otherwise.
func variant(cfg *ogconfig.Config, pl ogplatform.Platform) string {
	if cfg.OptimizationMode == ogconfig.SetViewport {
		return pl.Name
	}
	return ""
}
