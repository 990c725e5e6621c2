package console

import (
	"net/http"
	"net/url"

	"github.com/pictorhq/pictor/origin/perm"
)

// assistantsPerPage is how many connections a page of the list shows.
const assistantsPerPage = 50

// grantView is an MCP connection as GET /v1/oauth-grants answers it. The
// client's name is the client's own choice: the template escapes it as
// any text.
type grantView struct {
	ID          string   `json:"id"`
	ClientID    string   `json:"client_id"`
	ClientName  *string  `json:"client_name"`
	Permissions []string `json:"permissions"`
	KeyID       string   `json:"key_id"`
	APIID       *string  `json:"api_id"`
	KeyName     *string  `json:"key_name"`
	CreatedAt   string   `json:"created_at"`
	LastUsedAt  *string  `json:"last_used_at"`
}

// assistantRow is a connection as the page shows it.
type assistantRow struct {
	ID, Name, Key, APIID, CreatedAt, LastUsedAt string
	Permissions                                 []string
}

func newAssistantRow(g grantView) assistantRow {
	row := assistantRow{ID: g.ID, Name: "Unnamed client", Key: "(removed key)", CreatedAt: g.CreatedAt, Permissions: g.Permissions}
	if g.ClientName != nil && *g.ClientName != "" {
		row.Name = *g.ClientName
	}
	if g.KeyName != nil {
		row.Key = *g.KeyName
	}
	if g.APIID != nil {
		row.APIID = *g.APIID
	}
	if g.LastUsedAt != nil {
		row.LastUsedAt = *g.LastUsedAt
	}
	return row
}

type assistantsData struct {
	Grants      []assistantRow
	Denied      string
	CanRevoke   bool
	RevokeNeeds string
	Endpoint    string // the MCP endpoint, "" when it is off
	Next        string // the next page's address, "" on the last
	First       bool
}

// assistants lists the organization's MCP connections through
// GET /v1/oauth-grants, newest first, a page at a time.
func (c *Console) assistants(w http.ResponseWriter, r *http.Request, st *state) {
	g := st.principal.Grant
	d := assistantsData{CanRevoke: g.Has(perm.APIKeysDelete), Endpoint: c.cfg.MCPEndpoint}
	if !d.CanRevoke {
		d.RevokeNeeds = lacks(perm.APIKeysDelete)
	}
	l := newListPage(r, assistantsPerPage, "page_start")
	d.First = l.First
	var list struct {
		Data       []grantView `json:"data"`
		Pagination struct {
			NextPageStart *string `json:"next_page_start"`
		} `json:"pagination"`
	}
	switch err := c.call(r, st, http.MethodGet, "/v1/oauth-grants?"+l.Query.Encode(), nil, &list); {
	case isStatus(err, http.StatusForbidden):
		d.Denied = lacks(perm.APIKeysRead)
	case err != nil:
		c.failed(w, r, st, err)
		return
	default:
		for _, g := range list.Data {
			d.Grants = append(d.Grants, newAssistantRow(g))
		}
		d.Next = l.next("/console/assistants", list.Pagination.NextPageStart)
	}
	c.render(w, r, http.StatusOK, "assistants", page{Title: "Connected assistants", Data: d, state: st})
}

// revokeAssistant revokes a connection through
// DELETE /v1/oauth-grants/{id}.
func (c *Console) revokeAssistant(w http.ResponseWriter, r *http.Request, st *state) {
	if err := c.call(r, st, http.MethodDelete, "/v1/oauth-grants/"+url.PathEscape(r.PathValue("id")), nil, nil); err != nil {
		c.failed(w, r, st, err)
		return
	}
	http.Redirect(w, r, "/console/assistants", http.StatusSeeOther)
}
