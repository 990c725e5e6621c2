package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/imaging"
	"github.com/pictorhq/pictor/origin/perm"
)

// imageInfo is GET /v1/images/{id}'s answer.
type imageInfo struct {
	ID          string          `json:"id"`
	URL         string          `json:"url"`
	CreatedAt   string          `json:"created_at"`
	State       string          `json:"state"`
	Failure     string          `json:"failure"`
	Width       int             `json:"width"`
	Height      int             `json:"height"`
	Format      string          `json:"format"`
	Credits     int             `json:"credits"`
	StorageOnly bool            `json:"storage_only"`
	Parameters  json.RawMessage `json:"parameters"`
	Files       []struct {
		Format string `json:"format"`
		URL    string `json:"url"`
		Size   int64  `json:"size"`
	} `json:"files"`
}

// builderFields are the transformation parameters of GET /v1/image/{id}
// (spec, "GET image query parameters"), in the order the built URL
// names them.
var builderFields = []struct{ Name, Label, Hint string }{
	{"width", "Width", "pixels, up to 5000"},
	{"height", "Height", "pixels, up to 5000"},
	{"aspect_ratio", "Aspect ratio", "a crop such as 16_9 or 1_1"},
	{"crop_width", "Crop width", "pixels"},
	{"crop_height", "Crop height", "pixels"},
	{"x_1", "Crop left (x_1)", "pixels"},
	{"y_1", "Crop top (y_1)", "pixels"},
	{"x_2", "Crop right (x_2)", "pixels"},
	{"y_2", "Crop bottom (y_2)", "pixels"},
	{"dpi", "DPI", "30 to 600, metadata only"},
}

type builderField struct {
	Name, Label, Hint, Value, Error string
}

type imageData struct {
	Image      imageInfo
	Parameters string // indented
	CanDelete  bool
	Formats    []string
	Format     string // the builder's
	Download   bool
	Fields     []builderField
	Built      string // the URL the builder made, "" before it made one
	BuiltImage bool   // Built is an image a page can show
	Error      string
}

// image is an image's detail: GET /v1/images/{id}, and a builder of
// transformation URLs whose query the edge's own parser (imaging.Parse)
// checks, so it shows the messages the URL would get.
func (c *Console) image(w http.ResponseWriter, r *http.Request, st *state) {
	var d imageData
	id := r.PathValue("id")
	if err := c.call(r, st, http.MethodGet, "/v1/images/"+url.PathEscape(id), nil, &d.Image); err != nil {
		if isStatus(err, http.StatusForbidden) {
			c.message(w, r, st, http.StatusForbidden, "Image", lacks(perm.ImagesRead))
			return
		}
		c.failed(w, r, st, err)
		return
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, d.Image.Parameters, "", "  ") == nil {
		// The API escapes <, > and & in strings; a person reads them
		// as written (the page escapes them as HTML).
		d.Parameters = strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(pretty.String())
	}
	d.CanDelete = st.principal.Grant.Has(perm.ImagesDelete)
	for _, f := range d.Image.Files {
		d.Formats = append(d.Formats, f.Format)
	}
	c.build(r.URL.Query(), &d)
	c.render(w, r, http.StatusOK, "image", page{Title: "Image " + d.Image.ID, Data: d, state: st})
}

// build fills the builder from the page's query: once it was sent (a
// format is named), the URL it makes, or the fields' messages.
func (c *Console) build(q url.Values, d *imageData) {
	d.Format = q.Get("format")
	sent := d.Format != ""
	if !sent {
		d.Format = d.Image.Format
	}
	d.Download = q.Get("dl") == "1"
	query := url.Values{}
	var order []string
	for _, f := range builderFields {
		v := strings.TrimSpace(q.Get(f.Name))
		d.Fields = append(d.Fields, builderField{Name: f.Name, Label: f.Label, Hint: f.Hint, Value: v})
		if v != "" {
			query.Set(f.Name, v)
			order = append(order, f.Name)
		}
	}
	if d.Download {
		query.Set("dl", "1")
		order = append(order, "dl")
	}
	if !sent {
		return
	}
	base := ""
	for _, f := range d.Image.Files {
		if f.Format == d.Format {
			base = f.URL
		}
	}
	format, ok := imaging.ParseFormat(d.Format)
	if base == "" || !ok {
		d.Error = "Choose one of the formats listed."
		return
	}
	var raw strings.Builder
	for _, name := range order {
		if raw.Len() > 0 {
			raw.WriteByte('&')
		}
		raw.WriteString(url.QueryEscape(name) + "=" + url.QueryEscape(query.Get(name)))
	}
	if _, err := imaging.Parse(format, []byte(raw.String())); err != nil {
		var ae *apierr.Error
		if !errors.As(err, &ae) {
			d.Error = "These parameters make no URL."
			return
		}
		for i := range d.Fields {
			for _, fe := range ae.Fields {
				if fe.Path == d.Fields[i].Name {
					d.Fields[i].Error = fe.Message
				}
			}
		}
		d.Error = "Some parameters are not valid; see the messages next to them."
		return
	}
	d.Built = base
	if raw.Len() > 0 {
		d.Built += "?" + raw.String()
	}
	d.BuiltImage = format != imaging.PDF && !d.Download && !d.Image.StorageOnly
}
