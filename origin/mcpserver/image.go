package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxBatch is the most images one batch creates (spec §8; the value of
// images.MaxBatch, which this package does not import: it links libvips).
const maxBatch = 25

// imageKind is what an image tool creates.
type imageKind int

const (
	htmlImage imageKind = iota
	urlImage
	templatedImage
	batchImages
)

// elsewhere are the source arguments of other image tools, refused with
// the tool to use instead: REST would take them (a url wins over html) and
// render something else than the tool says.
var elsewhere = map[imageKind][][2]string{
	htmlImage:      {{"url", "create_url_image"}, {"template_id", "create_templated_image"}, {"template_values", "create_templated_image"}},
	urlImage:       {{"html", "create_image"}, {"template_id", "create_templated_image"}, {"template_values", "create_templated_image"}},
	templatedImage: {{"html", "create_image"}, {"url", "create_url_image"}},
}

// createImage returns the run of an image tool: its REST twin, then the
// rendered images when include_image asks for them.
func createImage(k imageKind) func(ctx context.Context, s *Server, c *caller, a args) result {
	return func(ctx context.Context, s *Server, c *caller, a args) result {
		var refused refusals
		include, f := a.flag("include_image")
		refused.add(f)
		for _, e := range elsewhere[k] {
			if a.sent(e[0]) {
				refused.add(invalid(e[0], "is not an argument of this tool: use %s", e[1]))
			}
		}
		target, body := "/v1/image", a.body("include_image")
		switch k {
		case templatedImage:
			id, f := a.id("template_id")
			if f == nil && !strings.HasPrefix(id, "t-") {
				f = invalid("template_id", "must be a template id (t-...)")
			}
			refused.add(f)
			target += "/" + url.PathEscape(id)
			if a.sent("template_version") {
				target += "/" + url.PathEscape(a.text("template_version"))
			}
			body = a.body("include_image", "template_id", "template_version")
		case batchImages:
			target = "/v1/image/batch"
		}
		if err := refused.err(); err != nil {
			return failure(err, c.requestID)
		}
		ans, err := s.do(ctx, c, http.MethodPost, target, nil, body, maxAnswerBytes)
		if err != nil {
			return failure(err, c.requestID)
		}
		res := s.relay(ans, c)
		if res.IsError || !include {
			return res
		}
		var links []link
		if k == batchImages {
			var out struct{ Images []link }
			json.Unmarshal(ans.body, &out)
			links = out.Images
		} else {
			var l link
			json.Unmarshal(ans.body, &l)
			links = []link{l}
		}
		s.attachImages(ctx, c, &res, links)
		return res
	}
}

// link is a created image in REST's answer.
type link struct {
	URL string `json:"url"`
	ID  string `json:"id"`
}

// attachImages adds the rendered images to res, fetched through the
// router as anyone would (GET of the public image path, which renders
// it): PNG, else the JPG or WebP rendition when the PNG exceeds what is
// left of MaxImageBytes, else a note saying why there is none.
func (s *Server) attachImages(ctx context.Context, c *caller, res *result, links []link) {
	budget := s.cfg.MaxImageBytes
	var notes []string
	for _, l := range links {
		img, note := s.fetchImage(ctx, c, l, budget)
		if img != nil {
			res.Content = append(res.Content, img)
			budget -= len(img.Data)
		}
		if note != "" {
			notes = append(notes, note)
		}
	}
	if len(notes) > 0 {
		res.Content = append(res.Content, &mcp.TextContent{Text: strings.Join(notes, "\n")})
	}
}

// imageFormats are the renditions tried, smallest last.
var imageFormats = []string{"", ".jpg", ".webp"}

func (s *Server) fetchImage(ctx context.Context, c *caller, l link, budget int) (*mcp.ImageContent, string) {
	p := imagePath(l.URL)
	if p == "" {
		return nil, fmt.Sprintf("Image %s is kept only in its storage destination: no preview.", l.ID)
	}
	if budget <= 0 {
		return nil, fmt.Sprintf("Image %s is not included: this result's images already use the %d bytes allowed; open its URL to see it.", l.ID, s.cfg.MaxImageBytes)
	}
	base := strings.TrimSuffix(p, path.Ext(p))
	for _, ext := range imageFormats {
		ans, err := s.do(ctx, c, http.MethodGet, base+ext, nil, nil, budget)
		if err != nil {
			return nil, fmt.Sprintf("Image %s could not be fetched: internal error, reference %s.", l.ID, c.requestID)
		}
		if ans.over {
			continue
		}
		if !ans.ok() {
			return nil, fmt.Sprintf("Image %s could not be rendered: %s", l.ID, s.restError(ans, c).Content[0].(*mcp.TextContent).Text)
		}
		mime := ans.header.Get("Content-Type")
		if !strings.HasPrefix(mime, "image/") || len(ans.body) == 0 {
			return nil, fmt.Sprintf("Image %s could not be fetched: the answer was %q, not an image.", l.ID, mime)
		}
		return &mcp.ImageContent{Data: ans.body, MIMEType: mime}, ""
	}
	return nil, fmt.Sprintf("Image %s is larger than the %d bytes left for images as PNG, JPG and WebP: not included; open its URL to see it.", l.ID, budget)
}

// imagePath returns the /v1/image/<id>[.ext] path of an image URL, "" for
// any other URL (a /v1/store/ one).
func imagePath(u string) string {
	parsed, err := url.Parse(u)
	if err != nil {
		return ""
	}
	i := strings.Index(parsed.Path, "/v1/image/")
	if i < 0 {
		return ""
	}
	return parsed.Path[i:]
}
