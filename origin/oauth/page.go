package oauth

import (
	"bytes"
	_ "embed"
	"html/template"
	"net/http"
	"strconv"

	"github.com/pictorhq/pictor/origin/perm"
)

//go:embed page.html
var pageHTML string

var pages = template.Must(template.New("oauth").Parse(pageHTML))

// pageData fills page.html.
type pageData struct {
	Kind         string // "signin", "consent", or "" for a message
	Title        string
	Error        string
	Message      string
	ClientName   string
	RedirectHost string
	Request      string // sealed pending state
	CSRF         string
	APIID        string
	Permissions  []permItem
}

type permItem struct{ Name, Description string }

// descriptions say what each permission lets a connection do.
var descriptions = map[perm.Permission]string{
	perm.APIKeysCreateUpdate:             "Create and change API keys",
	perm.APIKeysDelete:                   "Delete API keys",
	perm.APIKeysRead:                     "See API keys",
	perm.ImagesCreate:                    "Create images",
	perm.ImagesDelete:                    "Delete images",
	perm.ImagesRead:                      "See images",
	perm.ImagesStore:                     "Copy images to storage destinations",
	perm.OGConfigsCreateUpdate:           "Create and change Open Graph configurations",
	perm.OGConfigsDelete:                 "Delete Open Graph configurations",
	perm.OGConfigsRead:                   "See Open Graph configurations",
	perm.ProxiesCreateUpdate:             "Create and change proxies",
	perm.ProxiesDelete:                   "Delete proxies",
	perm.ProxiesRead:                     "See proxies",
	perm.StorageDestinationsCreateUpdate: "Create and change storage destinations",
	perm.StorageDestinationsDelete:       "Delete storage destinations",
	perm.StorageDestinationsRead:         "See storage destinations",
	perm.TemplatesCreateUpdate:           "Create and change templates",
	perm.TemplatesDelete:                 "Delete templates",
	perm.TemplatesRead:                   "See templates",
	perm.UsageRead:                       "See usage and credits",
}

func permItems(ps []perm.Permission) []permItem {
	out := make([]permItem, len(ps))
	for i, p := range ps {
		d := descriptions[p]
		if d == "" {
			d = string(p)
		}
		out[i] = permItem{Name: string(p), Description: d}
	}
	return out
}

// pageHeaders are the headers of every authorize and consent page. The form
// may post to this origin only, and its answer may redirect only to the
// client's redirect URI (redirectURI empty: nowhere else).
func pageHeaders(w http.ResponseWriter, redirectURI string) {
	formAction := "'self'"
	if src := formActionSource(redirectURI); src != "" {
		formAction += " " + src
	}
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action "+formAction+"; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
}

// render writes a page; the caller has set the page headers.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, d *pageData) {
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, "page", d); err != nil {
		s.log.ErrorContext(r.Context(), "oauth page failed", "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(buf.Bytes())
	}
}

// errorPage answers a request that cannot go back to a client, or must not.
func (s *Server) errorPage(w http.ResponseWriter, r *http.Request, status int, title, message string) {
	pageHeaders(w, "")
	s.render(w, r, status, &pageData{Title: title, Message: message})
}

func (s *Server) internalErrorPage(w http.ResponseWriter, r *http.Request, err error) {
	s.log.ErrorContext(r.Context(), "oauth authorize failed", "error", err)
	s.errorPage(w, r, http.StatusInternalServerError, "Something went wrong", "Pictor could not complete this request. Try again in a moment.")
}

// pageClient returns the registered client id of a consent page's request,
// or answers with an error page (unknown its message for an unregistered
// client) and returns nil.
func (s *Server) pageClient(w http.ResponseWriter, r *http.Request, id, unknown string) *client {
	c, err := s.client(r.Context(), id)
	if err != nil {
		s.internalErrorPage(w, r, err)
		return nil
	}
	if c == nil {
		s.errorPage(w, r, http.StatusBadRequest, "Unknown application", unknown)
	}
	return c
}
