package oauth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/pictorhq/pictor/origin/perm"
)

// Steps of the consent page.
const (
	stepSignIn  = "signin"
	stepConsent = "consent"
)

// pendingTTL is how long a consent page's form stays good.
const pendingTTL = 10 * time.Minute

// pending is an authorization request on its way through the consent page.
// It travels in the page's hidden field, sealed (AES-256-GCM under a key
// derived from the signing key), so the server keeps nothing per page.
type pending struct {
	Step        string            `json:"step"`
	Expires     int64             `json:"exp"`
	CSRF        string            `json:"csrf"` // the page's CSRF field: binds the state to the browser's cookie
	ClientID    string            `json:"client_id"`
	RedirectURI string            `json:"redirect_uri"`
	Challenge   string            `json:"code_challenge"`
	State       string            `json:"state,omitempty"`
	Resource    string            `json:"resource"`
	Scopes      []perm.Permission `json:"scopes"`
	// Set once the key's owner signed in.
	KeyID string `json:"key_id,omitempty"`
	OrgID string `json:"org_id,omitempty"`
}

var errStale = errors.New("the sign-in form is invalid or expired")

// stateAD is the additional data of sealed consent state.
var stateAD = []byte("pictor oauth pending")

func (s *Server) seal(p *pending) string {
	plain, _ := json.Marshal(p)
	nonce := make([]byte, s.sealer.NonceSize())
	rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(s.sealer.Seal(nonce, nonce, plain, stateAD))
}

// open returns the state sealed in field if it is intact, unexpired and
// bound to the CSRF field.
func (s *Server) open(field, csrf string) (*pending, error) {
	raw, err := base64.RawURLEncoding.DecodeString(field)
	n := s.sealer.NonceSize()
	if err != nil || len(raw) < n {
		return nil, errStale
	}
	plain, err := s.sealer.Open(nil, raw[:n], raw[n:], stateAD)
	for _, prev := range s.previousSealers {
		if err == nil {
			break
		}
		plain, err = prev.Open(nil, raw[:n], raw[n:], stateAD)
	}
	if err != nil {
		return nil, errStale
	}
	var p pending
	if err := json.Unmarshal(plain, &p); err != nil {
		return nil, errStale
	}
	if s.now().Unix() >= p.Expires || subtle.ConstantTimeCompare([]byte(p.CSRF), []byte(csrf)) != 1 {
		return nil, errStale
	}
	return &p, nil
}

// CSRF protection is a double submit: a random cookie, and in each form the
// HMAC of it. A page of another site can neither read the cookie nor
// compute the HMAC.
const csrfCookie = "pictor_oauth_csrf"

// csrfToken returns the browser's CSRF cookie value, setting a new cookie
// when it has none that is well formed.
func (s *Server) csrfToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && wellFormedCSRF(c.Value) {
		return c.Value
	}
	v := newSecret()
	http.SetCookie(w, &http.Cookie{
		Name:     csrfCookie,
		Value:    v,
		Path:     "/oauth",
		HttpOnly: true,
		Secure:   s.secure(),
		SameSite: http.SameSiteStrictMode,
	})
	return v
}

func wellFormedCSRF(v string) bool {
	b, err := base64.RawURLEncoding.DecodeString(v)
	return err == nil && len(b) == 32
}

// csrfField is the form field that goes with a CSRF cookie value.
func (s *Server) csrfField(cookie string) string { return csrfMAC(s.csrfKey, cookie) }

func csrfMAC(key []byte, cookie string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(cookie))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkCSRF reports whether the request carries a CSRF cookie and the field
// that goes with it, and returns the field. A field made under a previous
// signing key (a form served before a master key rotation) goes too.
func (s *Server) checkCSRF(r *http.Request, field string) (string, bool) {
	c, err := r.Cookie(csrfCookie)
	if err != nil || !wellFormedCSRF(c.Value) {
		return "", false
	}
	want := s.csrfField(c.Value)
	if subtle.ConstantTimeCompare([]byte(want), []byte(field)) == 1 {
		return want, true
	}
	for _, key := range s.previousCSRF {
		if prev := csrfMAC(key, c.Value); subtle.ConstantTimeCompare([]byte(prev), []byte(field)) == 1 {
			return prev, true
		}
	}
	return want, false
}

func (s *Server) secure() bool { return len(s.issuer) > 8 && s.issuer[:8] == "https://" }
