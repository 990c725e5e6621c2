package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/imageparams/schema"
	"github.com/pictorhq/pictor/origin/perm"
)

// An option of the new-image form, made from the one parameter table
// that feeds OpenAPI and MCP (imageparams/schema): a parameter added
// there appears here by itself.
type option struct {
	Name, Help string
	Kind       string // "bool", "enum", "number", "integer", "text", "json"
	Enum       []string
	Min, Max   string
	Value      string
	Checked    bool
	Error      string
	choice     bool // a boolean shown as a choice of true or false
}

// sourceFields are the form's own fields, not options.
var sourceFields = map[string]bool{"html": true, "css": true, "url": true}

func options(form map[string][]string, errs *apiError) []option {
	return formOptions(schema.ForHTML|schema.ForURL, sourceFields, false, form, errs)
}

// formOptions are the form's inputs for the parameters of use (but those
// of skip), made from the one parameter table and valued from form, with
// errs' message by field. boolChoice makes a boolean a choice of true or
// false rather than a checkbox (a template's default may be either).
func formOptions(use schema.Use, skip map[string]bool, boolChoice bool, form map[string][]string, errs *apiError) []option {
	props, order := schema.Properties(use)
	var out []option
	for _, name := range order {
		if skip[name] {
			continue
		}
		s := props[name]
		o := option{Name: name, Help: s.Description, Kind: kindOf(s), Value: first(form, name)}
		for _, e := range s.Enum {
			o.Enum = append(o.Enum, fmt.Sprint(e))
		}
		if o.Kind == "bool" && boolChoice {
			o.Kind, o.Enum, o.choice = "enum", []string{"true", "false"}, true
		}
		if s.Minimum != nil {
			o.Min = strconv.FormatFloat(*s.Minimum, 'f', -1, 64)
		}
		if s.Maximum != nil {
			o.Max = strconv.FormatFloat(*s.Maximum, 'f', -1, 64)
		}
		o.Checked = o.Kind == "bool" && o.Value != ""
		if errs != nil {
			o.Error = errs.field(name)
		}
		out = append(out, o)
	}
	return out
}

// setOptions writes the options that have a value into body as the API
// reads them, and returns the fields whose value does not read as its
// kind (a number or JSON option that is neither). keepText keeps a text
// value as typed, spaces included.
func setOptions(body map[string]any, opts []option, keepText bool) []apierr.FieldError {
	var bad []apierr.FieldError
	for _, o := range opts {
		v := strings.TrimSpace(o.Value)
		if v == "" {
			continue
		}
		switch {
		case o.Kind == "bool":
			body[o.Name] = true
		case o.choice:
			body[o.Name] = v == "true"
		case o.Kind == "integer" || o.Kind == "number":
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				bad = append(bad, fieldError(o.Name, "must be a number"))
				continue
			}
			body[o.Name] = n
		case o.Kind == "json":
			var j any
			if err := json.Unmarshal([]byte(v), &j); err != nil {
				bad = append(bad, fieldError(o.Name, "is not JSON"))
				continue
			}
			body[o.Name] = j
		case keepText:
			body[o.Name] = o.Value
		default:
			body[o.Name] = v
		}
	}
	return bad
}

func kindOf(s *jsonschema.Schema) string {
	switch {
	case s.Type == "boolean":
		return "bool"
	case len(s.Enum) > 0:
		return "enum"
	case s.Type == "integer":
		return "integer"
	case s.Type == "number":
		return "number"
	case s.Type == "string":
		return "text"
	}
	return "json"
}

func first(form map[string][]string, name string) string {
	if v := form[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

type playgroundData struct {
	HTML, CSS, URL           string
	HTMLError, URLError, Err string
	Options                  []option
	CanCreate                bool
	Created                  *createdImage
}

type createdImage struct {
	ID, URL, Curl, TypeScript, MCP string
}

func (c *Console) playground(w http.ResponseWriter, r *http.Request, st *state) {
	d := playgroundData{Options: options(nil, nil), CanCreate: st.principal.Grant.Has(perm.ImagesCreate)}
	c.render(w, r, http.StatusOK, "new", page{Title: "New image", Data: d, state: st})
}

// createImage sends the form as POST /v1/image; the route's refusals go
// next to their fields.
func (c *Console) createImage(w http.ResponseWriter, r *http.Request, st *state) {
	d := playgroundData{HTML: r.PostFormValue("html"), CSS: r.PostFormValue("css"), URL: r.PostFormValue("url"),
		CanCreate: st.principal.Grant.Has(perm.ImagesCreate)}
	body, local := imageBody(r.PostForm)
	raw, _ := json.Marshal(body)
	var made struct{ ID, URL string }
	err := error(nil)
	if local != nil {
		err = local
	} else {
		err = c.call(r, st, http.MethodPost, "/v1/image", bytes.NewReader(raw), &made)
	}
	var ae *apiError
	switch {
	case errors.As(err, &ae) && ae.Status < 500:
		d.Options = options(r.PostForm, ae)
		d.HTMLError, d.URLError = ae.field("html"), ae.field("url")
		d.Err = ae.Message // besides the fields' own messages: some may name no field of the form
		c.render(w, r, ae.Status, "new", page{Title: "New image", Data: d, state: st})
		return
	case err != nil:
		c.failed(w, r, st, err)
		return
	}
	d.Options = options(r.PostForm, nil)
	pretty, _ := json.MarshalIndent(body, "", "  ")
	d.Created = &createdImage{ID: made.ID, URL: made.URL,
		Curl:       "curl -u \"$PICTOR_API_ID:$PICTOR_API_KEY\" -H 'Content-Type: application/json' \\\n  -d '" + strings.ReplaceAll(string(pretty), "'", `'\''`) + "' \\\n  " + publicBase(made.URL) + "/v1/image",
		TypeScript: typeScript(body, pretty), MCP: mcpCall(body)}
	c.render(w, r, http.StatusOK, "new", page{Title: "New image", Data: d, state: st})
}

// imageBody is the new-image form as a POST /v1/image body; an option the
// form cannot send (a number or JSON option that is neither) is a 400 of
// the form's own, naming the field.
func imageBody(form url.Values) (map[string]any, *apiError) {
	body := map[string]any{}
	for _, f := range []string{"html", "css", "url"} {
		if v := form.Get(f); strings.TrimSpace(v) != "" {
			body[f] = v
		}
	}
	if bad := setOptions(body, options(form, nil), false); len(bad) > 0 {
		return body, &apiError{Status: http.StatusBadRequest, Kind: "Bad Request", Message: "Some options are not valid.", Fields: bad}
	}
	return body, nil
}

// publicBase is the scheme and host of an image URL.
func publicBase(u string) string {
	if i := strings.Index(u, "/v1/image/"); i > 0 {
		return u[:i]
	}
	return ""
}

// typeScript is the request as a call of the official TypeScript client
// (set up as docs/clients.md shows): a URL capture or an HTML one.
func typeScript(body map[string]any, pretty []byte) string {
	req := "CreateHtmlCssImageRequest"
	if _, ok := body["url"]; ok {
		req = "CreateUrlImageRequest"
	}
	return "// client: an HtmlCssToImageClient pointed at Pictor (docs/clients.md)\n" +
		"const image = await client.createImage(new " + req + "(" + string(pretty) + "));\n" +
		"if (!image.success) throw new Error(image.message);\nconsole.log(image.url);"
}

// mcpCall is the request as an MCP tool call: create_url_image for a URL
// capture, create_image for HTML.
func mcpCall(body map[string]any) string {
	tool, args := "create_image", maps.Clone(body)
	if _, ok := body["url"]; ok {
		tool = "create_url_image"
		delete(args, "html") // the URL wins, as in REST; the tool refuses both
	}
	raw, _ := json.MarshalIndent(map[string]any{"name": tool, "arguments": args}, "", "  ")
	return string(raw)
}
