package images

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/contract/imaging"
	"github.com/pictorhq/pictor/origin/perm"
	"github.com/pictorhq/pictor/origin/respond"
)

// MaxSignedURL bounds the path and query of a signed template URL that
// POST /v1/template/{id}/signed-url makes: the edge reads a request's
// line and headers into 16 KiB, so a longer URL would not be served.
const MaxSignedURL = 8 << 10

// maxSignBody bounds the body of a signed-URL request: the values of a
// URL of at most MaxSignedURL, with room for JSON's own syntax.
const maxSignBody = 4 * MaxSignedURL

// SignedURL is the answer of POST /v1/template/{id}/signed-url.
type SignedURL struct {
	URL string `json:"url"`
}

// SignTemplateURL handles POST /v1/template/{id}/signed-url: the signed
// URL (GET /v1/image/{template_id}/{token}[/{format}], TemplateURL) of the
// template for template_values, optionally a template_version and a
// format, signed with the caller's own key, so that a person without the
// key's secret (the console) can hand one out. The URL renders, and is
// charged, as that key on its first GET.
func (h *Handler) SignTemplateURL(w http.ResponseWriter, r *http.Request) error {
	p := auth.FromContext(r.Context())
	id := r.PathValue("id")
	obj, err := field.DecodeJSON(w, r, maxSignBody)
	if err != nil {
		return err
	}
	var errs field.Errors
	values := map[string]json.RawMessage{}
	if raw, ok := obj.Raw("template_values"); ok {
		if json.Unmarshal(raw, &values) != nil || values == nil {
			errs.Add("template_values", "must be a JSON object")
		}
	}
	version := 0
	if n, ok := obj.Int(&errs, "template_version", 1, 1<<31); ok {
		version = int(n)
	}
	format := ""
	if f, ok := obj.String(&errs, "format"); ok && f != "" {
		if _, known := imaging.ParseFormat(f); !known {
			errs.Add("format", "must be one of png, jpg, jpeg, webp, pdf")
		}
		format = strings.ToLower(f)
	}
	if err := errs.Err(); err != nil {
		return err
	}
	if h.Templates == nil {
		return apierr.NotFound("Templates are not available")
	}
	if owner, err := h.Templates.Owner(r.Context(), id); err != nil || owner != p.Org.ID {
		return apierr.NotFound("Template %s not found", id)
	}
	if version != 0 {
		if _, err := h.Templates.Variables(r.Context(), p.Org.ID, id, version); err != nil {
			var ae *apierr.Error
			if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
				return apierr.NotFound("Template %s has no version %d", id, version)
			}
			return err
		}
	}
	query, err := SignedTemplateQuery(values, version)
	if err != nil {
		return err
	}
	signer, err := h.Keys.Signer(r.Context(), p.APIID)
	if err != nil {
		return fmt.Errorf("sign a template URL: find the key: %w", err)
	}
	if !signer.Grant.Has(perm.ImagesCreate) {
		return apierr.Forbidden("Missing permission: signed URLs need a key with %s", perm.ImagesCreate)
	}
	path := "/v1/image/" + url.PathEscape(id) + "/" + Sign(signer.Secret, query)
	if format != "" {
		path += "/" + format
	}
	if query != "" {
		path += "?" + query
	}
	if len(path) > MaxSignedURL {
		return apierr.Field("template_values", "make a URL of %d bytes; a signed URL holds at most %d: pass fewer or shorter values, or render with POST /v1/image/{template_id}", len(path), MaxSignedURL)
	}
	respond.JSON(w, r, http.StatusOK, SignedURL{URL: strings.TrimRight(h.PublicURL, "/") + path})
	return nil
}

// SignedTemplateQuery is the query string of a signed template URL for
// values (and version, when not 0) as TemplateURL reads it back: a string
// that is not itself valid JSON is sent as it is, any other value as its
// JSON; parameters sorted by name. A value named template_version cannot
// be sent: that parameter picks the version.
func SignedTemplateQuery(values map[string]json.RawMessage, version int) (string, error) {
	var errs field.Errors
	q := url.Values{}
	for k, raw := range values {
		if k == "template_version" {
			errs.Add("template_values.template_version", "cannot be sent in a signed URL, whose template_version parameter picks the version: rename the variable")
			continue
		}
		q.Set(k, queryValue(raw))
	}
	if version != 0 {
		q.Set("template_version", strconv.Itoa(version))
	}
	if err := errs.Err(); err != nil {
		return "", err
	}
	if len(q) > field.MaxFormFields {
		return "", apierr.Field("template_values", "has more than %d values: a signed URL holds at most that many parameters", field.MaxFormFields)
	}
	return q.Encode(), nil // sorted by name
}

// queryValue is one template value as a query parameter's value.
func queryValue(raw json.RawMessage) string {
	var s string
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '"' && json.Unmarshal(t, &s) == nil && !json.Valid([]byte(s)) {
		return s
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}
