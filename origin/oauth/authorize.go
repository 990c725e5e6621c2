package oauth

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/perm"
)

// maxForm bounds a form body (consent page, token, revoke).
const maxForm = 64 << 10

// maxState bounds the state parameter, which the consent page carries.
const maxState = 4096

var (
	errFormType     = errors.New("the body must be application/x-www-form-urlencoded")
	errFormTooLarge = errors.New("the body is larger than 64 KiB")
	errFormSyntax   = errors.New("the body is not a valid form")
)

// readForm reads an application/x-www-form-urlencoded body.
func readForm(w http.ResponseWriter, r *http.Request) (url.Values, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/x-www-form-urlencoded" {
		return nil, errFormType
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxForm))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, errFormTooLarge
		}
		return nil, fmt.Errorf("read form: %w", err)
	}
	vals, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, errFormSyntax
	}
	return vals, nil
}

// repeated returns the first of names given more than once (RFC 6749 §3.1:
// parameters must not repeat), or "".
func repeated(vals url.Values, names ...string) string {
	for _, n := range names {
		if len(vals[n]) > 1 {
			return n
		}
	}
	return ""
}

// validPKCE reports whether v is 43 to 128 characters of the PKCE alphabet
// (RFC 7636 §4.1), which code challenges and verifiers share.
func validPKCE(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}

// canonicalResource returns the Resource when raw names it (a trailing slash
// aside), or "".
func (s *Server) canonicalResource(raw string) string {
	if raw == s.cfg.Resource || strings.TrimSuffix(raw, "/") == strings.TrimSuffix(s.cfg.Resource, "/") {
		return s.cfg.Resource
	}
	return ""
}

// Authorize starts an authorization (GET /oauth/authorize): it checks the
// request and shows the consent page's sign-in step.
func (s *Server) Authorize(w http.ResponseWriter, r *http.Request) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		s.errorPage(w, r, http.StatusBadRequest, "Invalid request", "The authorization request is malformed. Go back to your application and try again.")
		return
	}
	// Until the client and its redirect URI are known, errors stay here:
	// never redirect to a URI that is not the client's.
	if n := repeated(q, "client_id", "redirect_uri"); n != "" {
		s.errorPage(w, r, http.StatusBadRequest, "Invalid request", "The authorization request repeats "+n+".")
		return
	}
	c, err := s.client(r.Context(), q.Get("client_id"))
	if err != nil {
		s.internalErrorPage(w, r, err)
		return
	}
	if c == nil {
		s.errorPage(w, r, http.StatusBadRequest, "Unknown application", "This application is not registered with Pictor (client_id unknown). Go back to it and connect again.")
		return
	}
	redirectURI := q.Get("redirect_uri")
	if redirectURI == "" {
		s.errorPage(w, r, http.StatusBadRequest, "Invalid request", "The authorization request has no redirect_uri.")
		return
	}
	if !matchRedirect(c.RedirectURIs, redirectURI) {
		s.errorPage(w, r, http.StatusBadRequest, "Invalid redirect URI", "The application asked to be sent back to an address it did not register (redirect_uri). Pictor will not send you there.")
		return
	}

	state := q.Get("state")
	if len(state) > maxState {
		s.redirectError(w, r, redirectURI, "", "invalid_request", "state is longer than 4096 characters")
		return
	}
	fail := func(code, description string) { s.redirectError(w, r, redirectURI, state, code, description) }
	if n := repeated(q, "response_type", "code_challenge", "code_challenge_method", "scope", "resource", "state"); n != "" {
		fail("invalid_request", n+" is repeated")
		return
	}
	switch rt := q.Get("response_type"); {
	case rt == "":
		fail("invalid_request", "response_type is required")
		return
	case rt != "code":
		fail("unsupported_response_type", "response_type must be code")
		return
	}
	if !c.allows("authorization_code") {
		fail("unauthorized_client", "the client did not register the authorization_code grant")
		return
	}
	challenge := q.Get("code_challenge")
	switch {
	case challenge == "":
		fail("invalid_request", "code_challenge is required (PKCE with S256)")
		return
	case q.Get("code_challenge_method") != "S256":
		fail("invalid_request", "code_challenge_method must be S256")
		return
	case !validPKCE(challenge):
		fail("invalid_request", "code_challenge must be 43 to 128 characters of [A-Za-z0-9-._~]")
		return
	}
	scopes, err := s.requestedScopes(c, q.Get("scope"))
	if err != nil {
		fail("invalid_scope", err.Error())
		return
	}
	resource := s.cfg.Resource
	if q.Has("resource") {
		if resource = s.canonicalResource(q.Get("resource")); resource == "" {
			fail("invalid_target", "resource must be "+s.cfg.Resource)
			return
		}
	}

	csrf := s.csrfToken(w, r)
	p := &pending{
		Step:        stepSignIn,
		Expires:     s.now().Add(pendingTTL).Unix(),
		CSRF:        s.csrfField(csrf),
		ClientID:    c.ID,
		RedirectURI: redirectURI,
		Challenge:   challenge,
		State:       state,
		Resource:    resource,
		Scopes:      scopes,
	}
	pageHeaders(w, redirectURI)
	s.render(w, r, http.StatusOK, s.signInPage(c, p, "", ""))
}

// requestedScopes reads an authorization request's scope: by default every
// scope the client registered, or every allowed scope.
func (s *Server) requestedScopes(c *client, raw string) ([]perm.Permission, error) {
	registered, err := s.parseScopes(c.Scope)
	if err != nil {
		registered = nil // registered under other allowed scopes: offer what is still allowed
		for _, name := range strings.Fields(c.Scope) {
			if ps, err := s.parseScopes(name); err == nil {
				registered = append(registered, ps...)
			}
		}
	}
	if strings.TrimSpace(raw) == "" {
		if c.Scope != "" {
			return registered, nil
		}
		return s.scopes, nil
	}
	scopes, err := s.parseScopes(raw)
	if err != nil {
		return nil, err
	}
	if c.Scope != "" {
		for _, p := range scopes {
			if !containsPerm(registered, p) {
				return nil, fmt.Errorf("scope %s was not registered by the client", p)
			}
		}
	}
	return scopes, nil
}

func containsPerm(ps []perm.Permission, p perm.Permission) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

func clientName(c *client) string {
	if c.Name != "" {
		return c.Name
	}
	return "An unnamed application"
}

func (s *Server) signInPage(c *client, p *pending, apiID, message string) *pageData {
	return &pageData{
		Kind:         stepSignIn,
		Title:        "Connect " + clientName(c) + " to Pictor",
		Error:        message,
		ClientName:   clientName(c),
		RedirectHost: redirectHost(p.RedirectURI),
		Request:      s.seal(p),
		CSRF:         p.CSRF,
		APIID:        apiID,
	}
}

func (s *Server) consentPage(c *client, p *pending, offered []perm.Permission, message string) *pageData {
	if len(offered) == 0 && message == "" {
		message = "This API key holds none of the permissions the application asks for. Deny, then connect again with another key."
	}
	return &pageData{
		Kind:         stepConsent,
		Title:        "Allow " + clientName(c) + " to use Pictor?",
		Error:        message,
		ClientName:   clientName(c),
		RedirectHost: redirectHost(p.RedirectURI),
		Request:      s.seal(p),
		CSRF:         p.CSRF,
		Permissions:  permItems(offered),
	}
}

// redirect sends the browser back to the client with params added to the
// redirect URI's query (its own query kept) and the issuer (RFC 9207).
func (s *Server) redirect(w http.ResponseWriter, redirectURI string, params url.Values) {
	params.Set("iss", s.issuer)
	sep := "?"
	if strings.Contains(redirectURI, "?") {
		sep = "&"
		if strings.HasSuffix(redirectURI, "?") || strings.HasSuffix(redirectURI, "&") {
			sep = ""
		}
	}
	h := w.Header()
	h.Set("Location", redirectURI+sep+params.Encode())
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(http.StatusSeeOther)
}

// redirectError sends an authorization error back to the client (RFC 6749
// §4.1.2.1).
func (s *Server) redirectError(w http.ResponseWriter, r *http.Request, redirectURI, state, code, description string) {
	params := url.Values{"error": {code}, "error_description": {description}}
	if state != "" {
		params.Set("state", state)
	}
	s.log.InfoContext(r.Context(), "oauth authorization refused", "error", code, "description", description)
	s.redirect(w, redirectURI, params)
}

// Consent takes the consent page's forms (POST /oauth/authorize): the
// sign-in, then the approval or denial.
func (s *Server) Consent(w http.ResponseWriter, r *http.Request) {
	form, err := readForm(w, r)
	if err != nil {
		status := http.StatusBadRequest
		if errors.Is(err, errFormTooLarge) {
			status = http.StatusRequestEntityTooLarge
		}
		s.errorPage(w, r, status, "Invalid request", "The form could not be read. Go back to your application and connect again.")
		return
	}
	if n := repeated(form, "csrf", "request", "api_id", "api_key", "action"); n != "" {
		s.errorPage(w, r, http.StatusBadRequest, "Invalid request", "The form repeats "+n+". Go back to your application and connect again.")
		return
	}
	csrf, ok := s.checkCSRF(r, form.Get("csrf"))
	if !ok {
		s.log.InfoContext(r.Context(), "oauth consent refused: CSRF check failed")
		s.errorPage(w, r, http.StatusForbidden, "Request refused", "This form could not be verified (its cookie is missing or does not match). Go back to your application and connect again.")
		return
	}
	p, err := s.open(form.Get("request"), csrf)
	if err != nil {
		s.errorPage(w, r, http.StatusBadRequest, "This page has expired", "Go back to your application and connect again.")
		return
	}
	c, err := s.client(r.Context(), p.ClientID)
	if err != nil {
		s.internalErrorPage(w, r, err)
		return
	}
	if c == nil {
		s.errorPage(w, r, http.StatusBadRequest, "Unknown application", "This application is no longer registered with Pictor.")
		return
	}
	pageHeaders(w, p.RedirectURI)
	switch p.Step {
	case stepSignIn:
		s.signIn(w, r, c, p, form)
	case stepConsent:
		s.decide(w, r, c, p, form)
	default:
		s.errorPage(w, r, http.StatusBadRequest, "This page has expired", "Go back to your application and connect again.")
	}
}

// signIn checks the API key credentials of the sign-in step and shows the
// permissions to approve. The API key is neither logged, shown nor kept.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request, c *client, p *pending, form url.Values) {
	ctx := r.Context()
	now := s.now()
	attempt, _, ok := s.failures.take(c.ID, now)
	if !ok {
		s.log.WarnContext(ctx, "oauth sign-in refused: too many failures", "client_id", c.ID)
		w.Header().Set("Retry-After", "60")
		s.render(w, r, http.StatusTooManyRequests, &pageData{
			Title:   "Too many failed sign-ins",
			Message: "Too many failed sign-ins; wait a minute, then go back to your application and connect again.",
		})
		return
	}
	apiID := strings.TrimSpace(form.Get("api_id"))
	apiKey := form.Get("api_key")
	if len(apiID) > 256 {
		apiID = ""
	}
	var pr *auth.Principal
	var err error
	if apiID == "" || apiKey == "" || len(apiKey) > 1024 {
		err = auth.ErrInvalid
	} else {
		pr, err = s.cfg.Keys.Authenticate(ctx, apiID, apiKey)
	}
	if err != nil {
		var message string
		switch {
		case errors.Is(err, auth.ErrInvalid):
			message = "Wrong API ID or API key."
		case errors.Is(err, auth.ErrDisabled):
			message = "This API key is disabled."
		case errors.Is(err, auth.ErrSuspended):
			message = "Your organization is suspended."
		default:
			attempt.CancelAt(now)
			s.internalErrorPage(w, r, fmt.Errorf("sign in: %w", err))
			return
		}
		s.log.InfoContext(ctx, "oauth sign-in failed", "client_id", c.ID, "reason", message)
		p.Expires = now.Add(pendingTTL).Unix()
		s.render(w, r, http.StatusOK, s.signInPage(c, p, apiID, message))
		return
	}
	attempt.CancelAt(now) // only failures count
	next := *p
	next.Step, next.KeyID, next.OrgID = stepConsent, pr.KeyID, pr.Org.ID
	next.Expires = now.Add(pendingTTL).Unix()
	s.render(w, r, http.StatusOK, s.consentPage(c, &next, s.within(p.Scopes, pr.Grant), ""))
}

// decide takes the consent step's answer: a denial, or an approval of the
// checked permissions, which makes an authorization code.
func (s *Server) decide(w http.ResponseWriter, r *http.Request, c *client, p *pending, form url.Values) {
	ctx := r.Context()
	switch form.Get("action") {
	case "deny":
		s.redirectError(w, r, p.RedirectURI, p.State, "access_denied", "the user denied the request")
		return
	case "approve":
	default:
		s.errorPage(w, r, http.StatusBadRequest, "Invalid request", "Choose Approve or Deny.")
		return
	}
	pr, err := s.cfg.Keys.Principal(ctx, p.KeyID)
	if err == nil && pr.Org.ID != p.OrgID {
		err = auth.ErrInvalid
	}
	if err != nil {
		if !errors.Is(err, auth.ErrInvalid) && !errors.Is(err, auth.ErrDisabled) && !errors.Is(err, auth.ErrSuspended) {
			s.internalErrorPage(w, r, fmt.Errorf("load key: %w", err))
			return
		}
		back := *p
		back.Step, back.KeyID, back.OrgID = stepSignIn, "", ""
		back.Expires = s.now().Add(pendingTTL).Unix()
		s.render(w, r, http.StatusOK, s.signInPage(c, &back, "", "This API key can no longer be used. Sign in with another one."))
		return
	}
	checked := make([]perm.Permission, 0, len(form["scope"]))
	for _, name := range form["scope"] {
		checked = append(checked, perm.Permission(name))
	}
	approved := s.within(intersect(checked, p.Scopes), pr.Grant)
	if len(approved) == 0 {
		s.render(w, r, http.StatusOK, s.consentPage(c, p, s.within(p.Scopes, pr.Grant), "Choose at least one permission, or deny."))
		return
	}
	code := newSecret()
	now := s.now()
	rec := &authCode{
		ClientID:    c.ID,
		RedirectURI: p.RedirectURI,
		Challenge:   p.Challenge,
		Resource:    p.Resource,
		KeyID:       pr.KeyID,
		OrgID:       pr.Org.ID,
		Scopes:      approved,
		Expires:     now.Add(s.cfg.CodeTTL).UTC(),
	}
	if err := s.saveCode(hashSecret(code), rec); err != nil {
		s.internalErrorPage(w, r, err)
		return
	}
	s.log.InfoContext(ctx, "oauth connection approved", "client_id", c.ID, "key_id", pr.KeyID, "org_id", pr.Org.ID, "scope", joinScopes(approved))
	params := url.Values{"code": {code}}
	if p.State != "" {
		params.Set("state", p.State)
	}
	s.redirect(w, p.RedirectURI, params)
}

func (s *Server) saveCode(hash string, rec *authCode) error {
	b := s.cfg.Store.NewBatch()
	defer b.Close()
	if err := saveRecord(b, prefixCode+hash, rec, rec.Expires); err != nil {
		return err
	}
	if err := b.Commit(); err != nil {
		return fmt.Errorf("store authorization code: %w", err)
	}
	return nil
}

// intersect returns the members of a that are in b.
func intersect(a, b []perm.Permission) []perm.Permission {
	var out []perm.Permission
	for _, p := range a {
		if containsPerm(b, p) {
			out = append(out, p)
		}
	}
	return out
}
