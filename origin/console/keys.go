package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/pictorhq/pictor/origin/perm"
)

// keyView is an API key as GET /v1/api-keys answers it.
type keyView struct {
	ID          string   `json:"id"`
	APIID       string   `json:"api_id"`
	APIKey      string   `json:"api_key,omitempty"`
	Name        string   `json:"name"`
	Description *string  `json:"description"`
	Enabled     bool     `json:"enabled"`
	Permissions []string `json:"permissions"`
	AllFuture   bool     `json:"all_future_permissions"`
	CreatedAt   string   `json:"created_at"`
}

// permBox is one permission checkbox of the creation form: one the
// signed-in key does not hold cannot be granted, and says why.
type permBox struct {
	Name     string
	Checked  bool
	Disabled string
}

type keysData struct {
	Keys       []keyView
	Denied     string
	CanWrite   bool
	CanDelete  bool
	WriteNeeds string
	Boxes      []permBox
	Form       keyForm
	Created    *keyView
}

// keyForm is the creation form as sent, with the REST validation
// messages next to its fields.
type keyForm struct {
	Name, Description          string
	NameError, PermsError, Err string
}

func (c *Console) keysData(st *state, form keyForm, checked map[string]bool) keysData {
	g := st.principal.Grant
	d := keysData{Form: form, CanWrite: g.Has(perm.APIKeysCreateUpdate), CanDelete: g.Has(perm.APIKeysDelete)}
	if !d.CanWrite {
		d.WriteNeeds = lacks(perm.APIKeysCreateUpdate)
	}
	for _, p := range perm.All() {
		b := permBox{Name: string(p), Checked: checked[string(p)]}
		if !g.Has(p) {
			b.Disabled = "this key does not hold it, so it cannot grant it"
		}
		d.Boxes = append(d.Boxes, b)
	}
	return d
}

// keys lists the organization's keys, through GET /v1/api-keys: a key
// without api_keys:read sees none.
func (c *Console) keys(w http.ResponseWriter, r *http.Request, st *state) {
	c.showKeys(w, r, st, http.StatusOK, c.keysData(st, keyForm{}, nil))
}

func (c *Console) showKeys(w http.ResponseWriter, r *http.Request, st *state, status int, d keysData) {
	var list struct {
		Data []keyView `json:"data"`
	}
	switch err := c.call(r, st, http.MethodGet, "/v1/api-keys?include_disabled=true&count=100", nil, &list); {
	case isStatus(err, http.StatusForbidden):
		d.Denied = lacks(perm.APIKeysRead)
	case err != nil:
		c.failed(w, r, st, err)
		return
	default:
		d.Keys = list.Data
	}
	c.render(w, r, status, "keys", page{Title: "API keys", Data: d, state: st})
}

// createKey creates a key through POST /v1/api-keys and shows its secret
// once; the REST route's validation messages go next to the fields.
func (c *Console) createKey(w http.ResponseWriter, r *http.Request, st *state) {
	form := keyForm{Name: r.PostFormValue("name"), Description: r.PostFormValue("description")}
	checked := map[string]bool{}
	perms := []string{}
	for _, p := range r.PostForm["permission"] {
		checked[p] = true
		perms = append(perms, p)
	}
	body, _ := json.Marshal(map[string]any{"name": form.Name, "description": form.Description, "permissions": perms})
	var created keyView
	err := c.call(r, st, http.MethodPost, "/v1/api-keys", bytes.NewReader(body), &created)
	var ae *apiError
	if errors.As(err, &ae) && ae.Status < 500 {
		form.NameError, form.PermsError = ae.field("name"), ae.field("permissions")
		if form.NameError == "" && form.PermsError == "" {
			form.Err = ae.Message
		}
		c.showKeys(w, r, st, ae.Status, c.keysData(st, form, checked))
		return
	}
	if err != nil {
		c.failed(w, r, st, err)
		return
	}
	d := c.keysData(st, keyForm{}, nil)
	d.Created = &created
	c.showKeys(w, r, st, http.StatusOK, d)
}

// changeKey enables, disables or deletes a key through its REST route.
func (c *Console) changeKey(w http.ResponseWriter, r *http.Request, st *state) {
	id := url.PathEscape(r.PathValue("id"))
	var err error
	switch action := r.PathValue("action"); action {
	case "delete":
		err = c.call(r, st, http.MethodDelete, "/v1/api-keys/"+id, nil, nil)
	case "enable", "disable":
		var k keyView
		if err = c.call(r, st, http.MethodGet, "/v1/api-keys/"+id, nil, &k); err != nil {
			break
		}
		desc := ""
		if k.Description != nil {
			desc = *k.Description
		}
		body, _ := json.Marshal(map[string]any{"name": k.Name, "description": desc, "permissions": k.Permissions,
			"all_future_permissions": k.AllFuture, "disabled": action == "disable"})
		err = c.call(r, st, http.MethodPost, "/v1/api-keys/"+id, bytes.NewReader(body), nil)
	default:
		c.notFound(w, r)
		return
	}
	if err != nil {
		c.failed(w, r, st, err)
		return
	}
	http.Redirect(w, r, "/console/keys", http.StatusSeeOther)
}

// failed shows a REST refusal (4xx) as a message with its status, and
// anything else as unavailable.
func (c *Console) failed(w http.ResponseWriter, r *http.Request, st *state, err error) {
	var ae *apiError
	if errors.As(err, &ae) && ae.Status < 500 {
		c.message(w, r, st, ae.Status, http.StatusText(ae.Status), strings.TrimSpace(ae.Message))
		return
	}
	c.unavailable(w, r, err)
}
