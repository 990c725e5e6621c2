package console

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/api"
	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/console/assets"
	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/images"
	"github.com/pictorhq/pictor/origin/ratelimit"
)

// Keys checks a key's credentials and finds a key's current principal
// (an *apikey.Store).
type Keys interface {
	auth.Authenticator
	// Principal returns the key's principal now: auth.ErrInvalid once it
	// is gone, auth.ErrDisabled, auth.ErrSuspended.
	Principal(ctx context.Context, keyID string) (*auth.Principal, error)
}

// Config wires the console. Start from DefaultConfig and set the parts.
type Config struct {
	Store   kv.Store
	Keys    Keys
	API     http.Handler // the router the pages act through
	Limiter ratelimit.Limiter
	Now     func() time.Time
	Logger  *slog.Logger
	// Secure says the public URL is https: the session cookie is then
	// Secure and named with the __Host- prefix.
	Secure bool
	// ImageOrigin is the scheme and host of the images' URLs (the public
	// URL's), which pages may show; "" when they are the console's own.
	ImageOrigin string
	// Asset returns the URL path of a static asset by its logical name
	// ("console.css", "console.js"): assets.Path.
	Asset func(name string) string
	// Idle and Lifetime end a session unused that long, or that old.
	Idle, Lifetime time.Duration
	// SignIns is how many sign-in attempts one client address may make
	// per SignInWindow; past it the form answers 429.
	SignIns      int
	SignInWindow time.Duration
	// PreviewsPerMinute is the organization's allowance of live previews
	// (the origin's, which POST /v1/image/preview enforces): the pages
	// tell it.
	PreviewsPerMinute int
	// MCPEndpoint is the MCP endpoint's URL, which the connected
	// assistants page shows; "" when MCP is off.
	MCPEndpoint string
	// Variables names a template version's variables for the values form
	// of the template editor (the template handler's); nil shows the raw
	// JSON editor only.
	Variables Variables
}

// DefaultConfig returns the defaults: sessions end after 12 hours unused
// or 7 days, 10 sign-in attempts a minute per client address, 30
// previews a minute per organization.
func DefaultConfig() Config {
	return Config{Now: time.Now, Logger: slog.Default(), Asset: assets.Path,
		Idle: 12 * time.Hour, Lifetime: 7 * 24 * time.Hour, SignIns: 10, SignInWindow: time.Minute, PreviewsPerMinute: 30}
}

// Validate reports the first missing part or invalid setting.
func (c Config) Validate() error {
	switch {
	case c.Store == nil || c.Keys == nil || c.API == nil || c.Limiter == nil || c.Now == nil || c.Logger == nil || c.Asset == nil:
		return errors.New("console: Store, Keys, API, Limiter, Now, Logger and Asset are required")
	case c.Idle <= 0 || c.Lifetime < c.Idle:
		return fmt.Errorf("console: Idle %v, Lifetime %v: want 0 < Idle <= Lifetime", c.Idle, c.Lifetime)
	case strings.ContainsAny(c.ImageOrigin, " ;'\"\r\n"):
		return fmt.Errorf("console: ImageOrigin %q is not an origin", c.ImageOrigin)
	case c.SignIns < 1 || c.SignInWindow <= 0:
		return fmt.Errorf("console: %d sign-ins per %v: want at least 1 per positive window", c.SignIns, c.SignInWindow)
	case c.PreviewsPerMinute < 1:
		return fmt.Errorf("console: %d previews a minute: want at least 1", c.PreviewsPerMinute)
	}
	return nil
}

// Console serves the pages.
type Console struct {
	cfg      Config
	sessions *sessions
	cookie   string
	csp      string
	// fits bounds the OG cards fitted at once (ogCard): one per CPU.
	fits chan struct{}
	// previews are the sessions' live previews in flight.
	previews inflight
}

// New returns the console.
func New(cfg Config) (*Console, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Console{cfg: cfg, cookie: "pictor_console", fits: make(chan struct{}, runtime.NumCPU()),
		sessions: &sessions{store: cfg.Store, now: cfg.Now, idle: cfg.Idle, lifetime: cfg.Lifetime, touch: time.Minute}}
	if cfg.Secure {
		c.cookie = "__Host-pictor_console"
	}
	img := "'self' data: blob:" // blob: the live preview's image
	if cfg.ImageOrigin != "" {
		img += " " + cfg.ImageOrigin
	}
	c.csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src " + img + "; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
	return c, nil
}

// hidden says why the console's routes are not in the OpenAPI document.
const hidden = "the web console: HTML pages for a person, not an API"

// route is a console route: the shared headers (headers), then h.
func (c *Console) route(method, pattern string, h http.HandlerFunc) api.Route {
	return api.Route{Method: method, Pattern: pattern, Public: true, Handler: c.headers(h), Hidden: hidden}
}

// page is a route for a signed-in person (signedIn).
func (c *Console) page(method, pattern string, h func(http.ResponseWriter, *http.Request, *state)) api.Route {
	return c.route(method, pattern, c.signedIn(h))
}

// Routes are the console's routes, public routes of the table: the pages
// authenticate by their session cookie.
func (c *Console) Routes() []api.Route {
	var out []api.Route
	for _, rs := range resources {
		out = append(out, rs.routes(c)...)
	}
	return append(out,
		c.route(http.MethodGet, "/console", c.home),
		c.route(http.MethodPost, "/console/sign-in", c.signIn),
		c.page(http.MethodPost, "/console/sign-out", c.signOut),
		c.page(http.MethodGet, "/console/overview", c.overview),
		c.page(http.MethodGet, "/console/images", c.images),
		c.page(http.MethodGet, "/console/new", c.playground),
		c.page(http.MethodPost, "/console/new", c.createImage),
		c.page(http.MethodPost, "/console/new/preview", c.previewImage),
		c.page(http.MethodPost, "/console/templates/preview", c.previewTemplate),
		c.page(http.MethodPost, "/console/images/delete", c.deleteImages),
		c.page(http.MethodGet, "/console/images/{id}", c.image),
		c.page(http.MethodGet, "/console/keys", c.keys),
		c.page(http.MethodPost, "/console/keys", c.createKey),
		c.page(http.MethodPost, "/console/keys/{id}/{action}", c.changeKey),
		c.page(http.MethodGet, "/console/og/{id}/preview", c.ogPreview),
		c.page(http.MethodGet, "/console/og/cards/{domain_id}/{crawler}", c.ogCard),
		c.page(http.MethodGet, "/console/assistants", c.assistants),
		c.page(http.MethodPost, "/console/assistants/{id}/revoke", c.revokeAssistant),
		c.page(http.MethodGet, "/console/templates", c.listTemplates),
		c.page(http.MethodPost, "/console/templates", c.createTemplate),
		c.page(http.MethodGet, "/console/templates/new", c.newTemplate),
		c.page(http.MethodGet, "/console/templates/{id}", c.showTemplate),
		c.page(http.MethodPost, "/console/templates/{id}", c.updateTemplate),
		c.page(http.MethodPost, "/console/templates/{id}/restore", c.restoreTemplate),
		c.page(http.MethodPost, "/console/templates/{id}/delete", c.deleteTemplate),
		c.page(http.MethodPost, "/console/templates/{id}/signed-url", c.signTemplate),
		c.route(http.MethodGet, "/console/{rest...}", c.notFound),
		// Assets carry their own headers: immutable, not no-store.
		api.Route{Method: http.MethodGet, Pattern: assets.Prefix + "{name}", Public: true, Handler: assets.Handler().ServeHTTP, Hidden: hidden},
	)
}

// headers sets what every page carries: a strict Content-Security-Policy
// (no inline script, no framing), no caching, no sniffing, no referrer
// beyond the site. A cross-site POST (Sec-Fetch-Site) is refused before
// anything is read: the session cookie is SameSite=Strict, and this also
// covers the sign-in form, which has no session yet.
func (c *Console) headers(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", c.csp)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("Cache-Control", "no-store")
		if r.Method == http.MethodPost {
			if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
				c.message(w, r, nil, http.StatusForbidden, "Refused", "This form was sent from another site.")
				return
			}
			// Every form is read here, bounded, once: a form past the bound
			// is refused, never read as one without its fields.
			r.Body = http.MaxBytesReader(w, r.Body, maxForm)
			if err := r.ParseForm(); err != nil {
				var tooLarge *http.MaxBytesError
				if errors.As(err, &tooLarge) {
					c.message(w, r, nil, http.StatusRequestEntityTooLarge, "Too large", fmt.Sprintf("A console form may hold at most %d MiB.", maxForm>>20))
					return
				}
				c.message(w, r, nil, http.StatusBadRequest, "Unreadable form", "The form could not be read. Reload the page and try again.")
				return
			}
		}
		h(w, r)
	}
}

// state is a signed-in request: its session and the key's principal now.
type state struct {
	session   *session
	principal *auth.Principal
}

// signedIn runs h for a request with a live session whose key still
// works; any other goes to the sign-in form (a session whose key was
// disabled or deleted, or whose organization was suspended, ends there).
// A POST must carry the session's form token.
func (c *Console) signedIn(h func(http.ResponseWriter, *http.Request, *state)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		st, err := c.current(r)
		if errors.Is(err, errNoSession) {
			c.clearCookie(w)
			http.Redirect(w, r, "/console", http.StatusSeeOther)
			return
		}
		if err != nil {
			c.unavailable(w, r, err)
			return
		}
		se := st.session
		if r.Method == http.MethodPost && !se.checkCSRF(r.PostFormValue("csrf")) {
			c.message(w, r, st, http.StatusForbidden, "Refused", "This form is out of date or was not sent from the console. Reload the page and try again.")
			return
		}
		h(w, r, st)
	}
}

// current is the request's signed-in state: errNoSession without a live
// session, or once the session's key no longer works (disabled, deleted,
// its organization suspended), which ends the session.
func (c *Console) current(r *http.Request) (*state, error) {
	ck, err := r.Cookie(c.cookie)
	if err != nil {
		return nil, errNoSession
	}
	se, err := c.sessions.load(r.Context(), ck.Value)
	if err != nil {
		return nil, err
	}
	p, err := c.cfg.Keys.Principal(r.Context(), se.KeyID)
	if refused(err) {
		c.cfg.Logger.InfoContext(r.Context(), "console session ended: its key no longer works", "key_id", se.KeyID, "reason", err)
		c.sessions.end(se)
		return nil, errNoSession
	}
	if err != nil {
		return nil, err
	}
	return &state{session: se, principal: p}, nil
}

// refused reports the key store's refusal of a key (rather than its
// failure).
func refused(err error) bool {
	return errors.Is(err, auth.ErrInvalid) || errors.Is(err, auth.ErrDisabled) || errors.Is(err, auth.ErrSuspended)
}

// home is the sign-in form, or the overview once signed in.
func (c *Console) home(w http.ResponseWriter, r *http.Request) {
	if _, err := c.current(r); err == nil {
		http.Redirect(w, r, "/console/overview", http.StatusSeeOther)
		return
	}
	c.render(w, r, http.StatusOK, "signin", page{Title: "Sign in"})
}

// maxForm bounds a console form's body: the largest form is a new
// image's, whose html and css the REST route takes up to images.MaxBody;
// URL-encoding makes a byte at most three.
const maxForm = 3 * images.MaxBody

// signIn opens a session for a correct api_id and api_key. Wrong ones,
// whatever is wrong, get the form again with one message; each attempt
// counts against the client address's allowance.
func (c *Console) signIn(w http.ResponseWriter, r *http.Request) {
	apiID, secret := r.PostFormValue("api_id"), r.PostFormValue("api_key")
	client := "unknown"
	if addr, ok := contract.ClientAddr(r.Header.Get(contract.HeaderForwardedFor), r.RemoteAddr); ok {
		client = contract.ClientKey(addr)
	}
	d, err := c.cfg.Limiter.Allow(r.Context(), "console-sign-in/"+client, c.cfg.SignIns, c.cfg.SignInWindow)
	if err != nil {
		c.unavailable(w, r, err)
		return
	}
	if !d.Allowed {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(max(d.RetryAfter.Seconds(), 1)))))
		c.cfg.Logger.WarnContext(r.Context(), "console sign-in refused: too many attempts", "client", client)
		c.render(w, r, http.StatusTooManyRequests, "signin", page{Title: "Sign in", APIID: apiID,
			Error: fmt.Sprintf("Too many sign-in attempts from your address. Try again in %s.", d.RetryAfter.Round(time.Second))})
		return
	}
	p, err := c.cfg.Keys.Authenticate(r.Context(), apiID, secret)
	if err != nil {
		if !refused(err) {
			c.unavailable(w, r, err)
			return
		}
		c.render(w, r, http.StatusUnauthorized, "signin", page{Title: "Sign in", APIID: apiID,
			Error: "These credentials do not open the console. Check the API ID and the API key."})
		return
	}
	se, err := c.sessions.create(r.Context(), p.KeyID, p.Org.ID)
	if err != nil {
		c.unavailable(w, r, err)
		return
	}
	c.cfg.Logger.InfoContext(r.Context(), "console session opened", "key_id", p.KeyID, "org_id", p.Org.ID)
	http.SetCookie(w, c.sessionCookie(se.id, int(c.cfg.Lifetime.Seconds())))
	http.Redirect(w, r, "/console/overview", http.StatusSeeOther)
}

// signOut ends the session.
func (c *Console) signOut(w http.ResponseWriter, r *http.Request, st *state) {
	if err := c.sessions.end(st.session); err != nil {
		c.unavailable(w, r, err)
		return
	}
	c.clearCookie(w)
	http.Redirect(w, r, "/console", http.StatusSeeOther)
}

// sessionCookie is the session's cookie: HttpOnly, SameSite=Strict, on
// /console (on / with the __Host- prefix, which requires it).
func (c *Console) sessionCookie(value string, maxAge int) *http.Cookie {
	ck := &http.Cookie{Name: c.cookie, Value: value, Path: "/console", MaxAge: maxAge, HttpOnly: true, SameSite: http.SameSiteStrictMode}
	if c.cfg.Secure {
		ck.Secure, ck.Path = true, "/"
	}
	return ck
}

func (c *Console) clearCookie(w http.ResponseWriter) { http.SetCookie(w, c.sessionCookie("", -1)) }

func (c *Console) notFound(w http.ResponseWriter, r *http.Request) {
	c.message(w, r, nil, http.StatusNotFound, "Not found", "There is no such page in the console.")
}

// unavailable answers a failure of the store or the key store: 503, and
// the cause in the log only.
func (c *Console) unavailable(w http.ResponseWriter, r *http.Request, err error) {
	c.cfg.Logger.ErrorContext(r.Context(), "console request failed", "error", err)
	c.message(w, r, nil, http.StatusServiceUnavailable, "Unavailable", "The console cannot answer right now. Try again in a moment.")
}

func (c *Console) message(w http.ResponseWriter, r *http.Request, st *state, status int, title, text string) {
	c.render(w, r, status, "message", page{Title: title, Message: text, state: st})
}
