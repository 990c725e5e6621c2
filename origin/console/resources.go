package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"github.com/pictorhq/pictor/origin/api"
	"github.com/pictorhq/pictor/origin/perm"
)

// A resource page lists one kind of the organization's records and
// creates, edits and deletes them through their REST routes, with a JSON
// editor of the request body the route takes (field forms come later):
// the route's own validation answers, its messages shown by field path.
type resource struct {
	Path                string // "/console/proxies"
	Title               string // "Proxies"
	One                 string // "proxy"
	API                 string // "/v1/proxies"
	Read, Write, Delete perm.Permission
	Columns             []column
	// Example is the JSON a new record's editor starts from.
	Example string
	// Editable are the fields of a record the editor shows when it is
	// edited (what an update takes); the others are the server's.
	Editable []string
	// Keep turns what the view says into what the update route takes,
	// so that saving an unchanged editor changes nothing: the view's
	// "enabled" is the request's "disabled", and a stored secret the view
	// never shows is kept by its retain flag.
	Keep func(view, req map[string]any)
	// Note, when set, is one more GET whose JSON answer the page shows
	// (the AWS external id of storage destinations).
	Note *note
	// Links are further pages of a record, each a link in its row: Path,
	// the record's id, then Suffix.
	Links []rowLink
}

type rowLink struct{ Label, Suffix string }

type column struct{ Label, Field string }

type note struct {
	Label, API, Field string
}

var resources = []*resource{
	{Path: "/console/proxies", Title: "Proxies", One: "proxy", API: "/v1/proxies",
		Read: perm.ProxiesRead, Write: perm.ProxiesCreateUpdate, Delete: perm.ProxiesDelete,
		Columns:  []column{{"Name", "name"}, {"URL", "url"}, {"Enabled", "enabled"}},
		Example:  `{"name": "office", "url": "http://proxy.example.com:3128", "bypass_hosts": []}`,
		Editable: []string{"name", "url", "port", "bypass_hosts"},
		Keep: func(view, req map[string]any) {
			keepEnabled(view, req)
			if u, ok := view["username"].(string); ok && u != "" {
				req["authentication"] = map[string]any{"username": u, "retain_password": true}
			}
		}},
	{Path: "/console/storage-destinations", Title: "Storage destinations", One: "storage destination", API: "/v1/storage-destinations",
		Read: perm.StorageDestinationsRead, Write: perm.StorageDestinationsCreateUpdate, Delete: perm.StorageDestinationsDelete,
		Columns:  []column{{"Name", "name"}, {"Enabled", "enabled"}, {"Last test", "last_test_succeeded"}},
		Example:  `{"name": "bucket", "connection_info": {"provider": "aws_s3", "bucket": "my-bucket", "region": "us-east-1", "role_arn": "arn:aws:iam::123456789012:role/pictor-writer"}}`,
		Editable: []string{"name", "connection_info", "hcti_storage_disabled"},
		Keep: func(view, req map[string]any) {
			keepEnabled(view, req)
			if ci, ok := req["connection_info"].(map[string]any); ok {
				if _, keys := ci["access_key_id"]; keys {
					ci["retain_secret_access_key"] = true
				}
			}
		},
		Note: &note{Label: "AWS external id (aws_s3 roles must require it)", API: "/v1/storage-destinations/aws-external-id", Field: "external_id"}},
	{Path: "/console/og", Title: "OG images", One: "OG configuration", API: "/v1/og-configs",
		Read: perm.OGConfigsRead, Write: perm.OGConfigsCreateUpdate, Delete: perm.OGConfigsDelete,
		Columns:  []column{{"Name", "name"}, {"Base URL", "base_url"}, {"Domain id", "domain_id"}},
		Example:  `{"config_type": "html_css", "base_url": "https://www.example.com", "name": "site"}`,
		Editable: []string{"config_type", "name", "description", "base_url", "refresh_interval_s", "optimization_mode", "extract_values", "default_options", "template_id", "template_version", "template_values_mapping", "headers", "additional_header_origins", "max_new_images_per_day", "max_new_images_per_period"},
		Keep:     keepEnabled,
		Links:    []rowLink{{Label: "Preview", Suffix: "/preview"}}},
}

type resourceData struct {
	R          *resource
	Rows       []resourceRow
	Denied     string
	Refused    string // the plan's or another refusal of the list
	CanWrite   bool
	WriteNeeds string
	CanDelete  bool
	Editor     string // the JSON in the editor
	EditID     string // the record edited, "" for a new one
	Err        *apiError
	NoteText   string
	Next       string // the list's next page, "" on the last
	First      bool
}

type resourceRow struct {
	ID    string
	Cells []string
}

// routes are the resource's pages: the list, a record's editor, saving a
// new or an edited record, deleting one.
func (rs *resource) routes(c *Console) []api.Route {
	return []api.Route{
		c.page(http.MethodGet, rs.Path, func(w http.ResponseWriter, r *http.Request, s *state) {
			c.resourcePage(w, r, s, rs, http.StatusOK, "", "", nil)
		}),
		c.page(http.MethodGet, rs.Path+"/{id}", func(w http.ResponseWriter, r *http.Request, s *state) { c.editResource(w, r, s, rs) }),
		c.page(http.MethodPost, rs.Path, func(w http.ResponseWriter, r *http.Request, s *state) { c.saveResource(w, r, s, rs, "") }),
		c.page(http.MethodPost, rs.Path+"/{id}", func(w http.ResponseWriter, r *http.Request, s *state) {
			c.saveResource(w, r, s, rs, r.PathValue("id"))
		}),
		c.page(http.MethodPost, rs.Path+"/{id}/delete", func(w http.ResponseWriter, r *http.Request, s *state) { c.deleteResource(w, r, s, rs) }),
	}
}

// resourcePage shows the list and the editor (with editor's JSON, the
// record edited and the refusal of the last save, if any).
func (c *Console) resourcePage(w http.ResponseWriter, r *http.Request, st *state, rs *resource, status int, editor, editID string, saveErr *apiError) {
	g := st.principal.Grant
	d := resourceData{R: rs, CanWrite: g.Has(rs.Write), CanDelete: g.Has(rs.Delete), Editor: editor, EditID: editID, Err: saveErr}
	if d.Editor == "" {
		d.Editor = rs.Example
	}
	if !d.CanWrite {
		d.WriteNeeds = lacks(rs.Write)
	}
	var list struct {
		Data       []map[string]any `json:"data"`
		Pagination struct {
			NextPageStart *string `json:"next_page_start"`
		} `json:"pagination"`
	}
	l := newListPage(r, 100, "page_start")
	d.First = l.First
	var ae *apiError
	switch err := c.call(r, st, http.MethodGet, rs.API+"?"+l.Query.Encode(), nil, &list); {
	case isStatus(err, http.StatusForbidden) && !g.Has(rs.Read):
		d.Denied = lacks(rs.Read)
	case errors.As(err, &ae) && ae.Status < 500:
		d.Refused = ae.Message // a plan without the resource
	case err != nil:
		c.failed(w, r, st, err)
		return
	default:
		for _, rec := range list.Data {
			row := resourceRow{ID: text(rec["id"])}
			for _, col := range rs.Columns {
				row.Cells = append(row.Cells, text(rec[col.Field]))
			}
			d.Rows = append(d.Rows, row)
		}
		d.Next = l.next(rs.Path, list.Pagination.NextPageStart)
	}
	if rs.Note != nil && d.Denied == "" && d.Refused == "" {
		var v map[string]any
		if err := c.call(r, st, http.MethodGet, rs.Note.API, nil, &v); err == nil {
			d.NoteText = text(v[rs.Note.Field])
		}
	}
	c.render(w, r, status, "resource", page{Title: rs.Title, Data: d, state: st})
}

// keepEnabled writes the view's "enabled" as the request's "disabled".
func keepEnabled(view, req map[string]any) {
	if on, ok := view["enabled"].(bool); ok {
		req["disabled"] = !on
	}
}

// text writes a JSON value for a table cell.
func text(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		raw, _ := json.Marshal(v)
		return string(raw)
	}
}

// editResource puts a record's editable fields in the editor.
func (c *Console) editResource(w http.ResponseWriter, r *http.Request, st *state, rs *resource) {
	id := r.PathValue("id")
	var rec map[string]any
	if err := c.call(r, st, http.MethodGet, rs.API+"/"+url.PathEscape(id), nil, &rec); err != nil {
		c.failed(w, r, st, err)
		return
	}
	req := map[string]any{}
	for _, k := range rs.Editable {
		if v, ok := rec[k]; ok {
			req[k] = v
		}
	}
	if rs.Keep != nil {
		rs.Keep(rec, req)
	}
	raw, _ := json.MarshalIndent(req, "", "  ")
	c.resourcePage(w, r, st, rs, http.StatusOK, string(raw), id, nil)
}

// saveResource sends the editor's JSON to the create (id "") or update
// route; a refusal comes back in the editor with the route's messages.
func (c *Console) saveResource(w http.ResponseWriter, r *http.Request, st *state, rs *resource, id string) {
	body := r.PostFormValue("json")
	target, status := rs.API, http.StatusOK
	if id != "" {
		target += "/" + url.PathEscape(id)
	}
	err := c.call(r, st, http.MethodPost, target, bytes.NewReader([]byte(body)), nil)
	var ae *apiError
	if errors.As(err, &ae) && ae.Status < 500 {
		status = ae.Status
		c.resourcePage(w, r, st, rs, status, body, id, ae)
		return
	}
	if err != nil {
		c.failed(w, r, st, err)
		return
	}
	http.Redirect(w, r, rs.Path, http.StatusSeeOther)
}

func (c *Console) deleteResource(w http.ResponseWriter, r *http.Request, st *state, rs *resource) {
	if err := c.call(r, st, http.MethodDelete, rs.API+"/"+url.PathEscape(r.PathValue("id")), nil, nil); err != nil {
		c.failed(w, r, st, err)
		return
	}
	http.Redirect(w, r, rs.Path, http.StatusSeeOther)
}
