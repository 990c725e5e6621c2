package console

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/pictorhq/pictor/origin/api"
	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/perm"
)

//go:embed templates/*.html
var templateFiles embed.FS

// page is what a template shows. state is nil before sign-in.
type page struct {
	Title   string
	Error   string
	Message string
	APIID   string
	Data    any
	state   *state
	asset   func(string) string
	// previews is the organization's allowance of live previews a
	// minute, which the pages with one tell.
	previews int
	Nav      []navItem
}

type navItem struct {
	Path, Label string
	Current     bool
}

// nav are the console's pages, in the navigation bar's order.
var nav = []navItem{
	{Path: "/console/overview", Label: "Overview"},
	{Path: "/console/images", Label: "Images"},
	{Path: "/console/new", Label: "New image"},
	{Path: "/console/templates", Label: "Templates"},
	{Path: "/console/keys", Label: "API keys"},
	{Path: "/console/og", Label: "OG images"},
	{Path: "/console/proxies", Label: "Proxies"},
	{Path: "/console/storage-destinations", Label: "Storage"},
	{Path: "/console/assistants", Label: "Connected assistants"},
}

func (p page) SignedIn() bool { return p.state != nil }

// CSRF is the session's form token.
func (p page) CSRF() string {
	if p.state == nil {
		return ""
	}
	return p.state.session.CSRF
}

// Org is the signed-in organization's name.
func (p page) Org() string {
	if p.state == nil {
		return ""
	}
	return p.state.principal.Org.Name
}

// Key is the signed-in key's API ID.
func (p page) Key() string {
	if p.state == nil {
		return ""
	}
	return p.state.principal.APIID
}

// Asset is the URL path of a static asset, "" when there is none.
func (p page) Asset(name string) string { return p.asset(name) }

// PreviewsPerMinute is the organization's allowance of live previews.
func (p page) PreviewsPerMinute() int { return p.previews }

var templates = template.Must(template.New("console").ParseFS(templateFiles, "templates/*.html"))

// render writes the page with the template name inside the layout.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	p.asset, p.previews = c.cfg.Asset, c.cfg.PreviewsPerMinute
	if p.state != nil {
		for _, n := range nav {
			n.Current = r.URL.Path == n.Path || strings.HasPrefix(r.URL.Path, n.Path+"/") // a page under it too
			p.Nav = append(p.Nav, n)
		}
	}
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, name, p); err != nil {
		c.cfg.Logger.ErrorContext(r.Context(), "console page failed", "page", name, "error", err)
		http.Error(w, "The page could not be made.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// apiError is a REST answer other than 2xx, in the standard body.
type apiError struct {
	Status  int                 `json:"statusCode"`
	Kind    string              `json:"error"`
	Message string              `json:"message"`
	Fields  []apierr.FieldError `json:"validation_errors"`
	// RetryAfter is the answer's Retry-After header, "" without one.
	RetryAfter string `json:"-"`
}

func fieldError(path, message string) apierr.FieldError {
	return apierr.FieldError{Path: path, Message: message}
}

// field is the message of the field at path, "" when it has none.
func (e *apiError) field(path string) string {
	for _, f := range e.Fields {
		if f.Path == path || strings.HasPrefix(f.Path, path+"[") {
			return f.Message
		}
	}
	return ""
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Kind, e.Message) }

// call runs one REST request in-process as the signed-in key (the way
// the MCP tools do): the route's own permission check, plan rules, rate
// limit, validation and audit apply. A 2xx answer's JSON goes into out;
// any other is an *apiError.
func (c *Console) call(r *http.Request, st *state, method, target string, body io.Reader, out any) error {
	rec, err := c.serve(r, st, method, target, body, nil)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(rec.body.Bytes(), out)
}

// serve runs one REST request in-process as call does, with the headers
// of header too, and returns the 2xx answer; any other is an *apiError.
func (c *Console) serve(r *http.Request, st *state, method, target string, body io.Reader, header http.Header) (*recorder, error) {
	rec, err := c.exchange(r, st, method, target, body, header)
	if err != nil {
		return nil, err
	}
	if err := rec.refusal(); err != nil {
		return nil, err
	}
	return rec, nil
}

// exchange runs one REST request in-process as the signed-in key, with
// the headers of header too, and returns its answer as it is, whatever
// its status: for routes whose answer is passed on (the live preview's
// image or refusal).
func (c *Console) exchange(r *http.Request, st *state, method, target string, body io.Reader, header http.Header) (*recorder, error) {
	req, err := http.NewRequestWithContext(api.WithCaller(r.Context(), st.principal), method, target, body)
	if err != nil {
		return nil, err
	}
	if body == nil {
		req.Body = http.NoBody
	} else {
		req.Header.Set("Content-Type", "application/json")
	}
	req.RemoteAddr, req.Host, req.RequestURI = r.RemoteAddr, r.Host, target
	for _, h := range []string{contract.HeaderRequestID, contract.HeaderForwardedFor} {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	rec := &recorder{header: http.Header{}}
	c.cfg.API.ServeHTTP(rec, req)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return rec, nil
}

// refusal is the answer as an *apiError unless it is a 2xx.
func (r *recorder) refusal() error {
	if r.status >= 200 && r.status <= 299 {
		return nil
	}
	e := &apiError{Status: r.status, RetryAfter: r.header.Get("Retry-After")}
	if json.Unmarshal(r.body.Bytes(), e) != nil || e.Message == "" {
		e.Message = http.StatusText(r.status)
	}
	return e
}

// recorder keeps a REST answer made in-process.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

// lacks is the text shown in place of what the key may not see.
func lacks(p perm.Permission) string { return "This key lacks the " + string(p) + " permission." }

// overviewData fills the overview.
type overviewData struct {
	Plan          string
	Credits, Used int64
	Left          int64
	UsageDenied   string
	Images        []imageEntry
	ImagesDenied  string
	PeriodStart   string
	Chart         *chart
}

type imageEntry struct {
	ID        string `json:"id"`
	URL       string `json:"url"`
	CreatedAt string `json:"created_at"`
}

// overview shows the credits used and left this billing period and the
// last images.
func (c *Console) overview(w http.ResponseWriter, r *http.Request, st *state) {
	pl := st.principal.Org.PlanInfo()
	d := overviewData{Plan: pl.Name, Credits: pl.Credits}
	var usage struct {
		Data struct {
			Day map[string]int64 `json:"day"`
		} `json:"data"`
		Periods []struct {
			TotalImages int64   `json:"total_images"`
			Start       string  `json:"start"`
			End         *string `json:"end"`
		} `json:"per_billing_period"`
	}
	switch err := c.call(r, st, http.MethodGet, "/v1/usage", nil, &usage); {
	case isStatus(err, http.StatusForbidden):
		d.UsageDenied = lacks(perm.UsageRead)
	case err != nil:
		c.unavailable(w, r, err)
		return
	default:
		for _, p := range usage.Periods {
			if p.End == nil {
				d.Used, d.PeriodStart = p.TotalImages, p.Start
			}
		}
		d.Left = max(d.Credits-d.Used, 0)
		d.Chart = dailyChart(usage.Data.Day, d.PeriodStart, c.cfg.Now())
	}
	var list struct {
		Images []imageEntry `json:"images"`
	}
	switch err := c.call(r, st, http.MethodGet, "/v1/images?count=10", nil, &list); {
	case isStatus(err, http.StatusForbidden):
		d.ImagesDenied = lacks(perm.ImagesRead)
	case err != nil:
		c.unavailable(w, r, err)
		return
	default:
		d.Images = list.Images // newest first, as the route lists them
	}
	c.render(w, r, http.StatusOK, "overview", page{Title: "Overview", Data: d, state: st})
}

func isStatus(err error, status int) bool {
	e, ok := err.(*apiError)
	return ok && e.Status == status
}

// listPage is one page of a list: the REST route's query (the address's
// count, which the route checks, else perPage; and the address's cursor,
// passed on under its name: "page_start", or "page_token" for images),
// and whether it is the first page.
type listPage struct {
	r      *http.Request
	cursor string
	Query  url.Values
	First  bool
}

func newListPage(r *http.Request, perPage int, cursor string) listPage {
	l := listPage{r: r, cursor: cursor, Query: url.Values{"count": {strconv.Itoa(perPage)}}}
	if n := r.URL.Query().Get("count"); n != "" {
		l.Query.Set("count", n)
	}
	at := r.URL.Query().Get(cursor)
	if at != "" {
		l.Query.Set(cursor, at)
	}
	l.First = at == ""
	return l
}

// next is the address of the page after this one at path, given the
// route's next cursor; "" on the last page.
func (l listPage) next(path string, cursor *string) string {
	if cursor == nil {
		return ""
	}
	q := url.Values{l.cursor: {*cursor}}
	if n := l.r.URL.Query().Get("count"); n != "" {
		q.Set("count", n)
	}
	return path + "?" + q.Encode()
}
