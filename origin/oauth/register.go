package oauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/respond"
)

// Registration bounds. A stored client is at most ≈ 6 KiB (redirect URIs
// 2 KiB, 4 KiB if every byte were a quote or backslash JSON escapes; the
// name 1.2 KiB at most), ≈ 0.5 KiB for a typical one.
const (
	maxRegistrationBody = 64 << 10
	maxRedirectURIs     = 10
	// maxRedirectURIBytes bounds one redirect URI at registration; a
	// real one is a loopback or web callback of well under 200 bytes.
	maxRedirectURIBytes = 1024
	// maxRedirectURIsBytes bounds them all together.
	maxRedirectURIsBytes = 2048
	maxClientName        = 200
)

// registration is the client metadata Pictor keeps (RFC 7591 §2); other
// members are ignored.
type registration struct {
	RedirectURIs            []string `json:"redirect_uris"`
	ClientName              string   `json:"client_name"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	Scope                   string   `json:"scope"`
}

// registrationError is an RFC 7591 §3.2.2 error.
type registrationError struct {
	status      int
	code        string
	description string
}

func badMetadata(format string, args ...any) *registrationError {
	return &registrationError{http.StatusBadRequest, "invalid_client_metadata", fmt.Sprintf(format, args...)}
}

func (s *Server) registrationFail(w http.ResponseWriter, r *http.Request, e *registrationError) {
	respond.JSON(w, r, e.status, map[string]string{"error": e.code, "error_description": e.description})
}

// Register registers a client (POST /oauth/register, RFC 7591). It needs no
// credentials, so registrations are rate limited per client address, and
// for all addresses together far above that. A client is kept
// UnusedClientTTL unless it redeems a code (Sweep).
func (s *Server) Register(w http.ResponseWriter, r *http.Request) {
	cors(w)
	w.Header().Set("Cache-Control", "no-store")
	now := s.now()
	registrant, ok := s.admitRegistration(w, r, now)
	if !ok {
		return
	}
	reg, rerr := readRegistration(w, r)
	if rerr != nil {
		s.registrationFail(w, r, rerr)
		return
	}
	c, rerr := s.checkRegistration(reg)
	if rerr != nil {
		s.registrationFail(w, r, rerr)
		return
	}
	c.ID = uuid.NewString()
	c.IssuedAt = now.Unix()
	c.Expires = now.Add(s.cfg.UnusedClientTTL).UTC()
	c.Registered, c.Registrant = now.UTC(), registrant
	var secret string
	if !c.public() {
		secret = newSecret()
		c.SecretHash = hashSecret(secret)
	}
	ev, err := s.registerClient(r.Context(), c)
	if err != nil {
		s.log.ErrorContext(r.Context(), "oauth registration failed", "error", err)
		s.registrationFail(w, r, &registrationError{http.StatusInternalServerError, "server_error", "the client could not be registered"})
		return
	}
	s.evicted.WithLabelValues("address").Add(float64(ev.address))
	s.evicted.WithLabelValues("total").Add(float64(ev.total))
	s.log.InfoContext(r.Context(), "oauth client registered", "client_id", c.ID, "client_name", c.Name, "token_endpoint_auth_method", c.AuthMethod,
		"evicted_address", ev.address, "evicted_total", ev.total)
	out := map[string]any{
		"client_id":                  c.ID,
		"client_id_issued_at":        c.IssuedAt,
		"redirect_uris":              c.RedirectURIs,
		"token_endpoint_auth_method": c.AuthMethod,
		"grant_types":                c.GrantTypes,
		"response_types":             c.ResponseTypes,
	}
	if c.Name != "" {
		out["client_name"] = c.Name
	}
	if c.Scope != "" {
		out["scope"] = c.Scope
	}
	if secret != "" {
		out["client_secret"] = secret
		out["client_secret_expires_at"] = 0
	}
	respond.JSON(w, r, http.StatusCreated, out)
}

// admitRegistration takes a registration from the client address's
// allowance, then from everyone's, or answers 429 with Retry-After. The
// address is the last X-Forwarded-For entry, which the edge appends; key
// is its contract.ClientKey.
func (s *Server) admitRegistration(w http.ResponseWriter, r *http.Request, now time.Time) (key string, ok bool) {
	key = "unknown"
	if addr, ok := contract.ClientAddr(r.Header.Get(contract.HeaderForwardedFor), r.RemoteAddr); ok {
		key = contract.ClientKey(addr)
	}
	mine, wait, ok := s.registrants.take(key, now)
	limit := "address"
	if ok {
		if _, wait, ok = reserve(s.registrations, now); !ok {
			mine.CancelAt(now) // the address did not get to register
			limit = "all"
		}
	}
	if ok {
		return key, true
	}
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(max(min(wait, time.Hour).Seconds(), 1)))))
	s.log.WarnContext(r.Context(), "oauth registration refused: rate limited", "client", key, "limit", limit)
	description := "too many client registrations from your address; try again later"
	if limit == "all" {
		description = "too many client registrations; try again later"
	}
	s.registrationFail(w, r, &registrationError{http.StatusTooManyRequests, "temporarily_unavailable", description})
	return key, false
}

func readRegistration(w http.ResponseWriter, r *http.Request) (*registration, *registrationError) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return nil, &registrationError{http.StatusUnsupportedMediaType, "invalid_client_metadata", "the body must be application/json"}
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRegistrationBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, &registrationError{http.StatusRequestEntityTooLarge, "invalid_client_metadata", "the body is larger than 64 KiB"}
		}
		return nil, badMetadata("the body could not be read")
	}
	var reg registration
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&reg); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			if strings.HasPrefix(typeErr.Field, "redirect_uris") {
				return nil, &registrationError{http.StatusBadRequest, "invalid_redirect_uri", "redirect_uris must be an array of strings"}
			}
			return nil, badMetadata("%s has the wrong type", typeErr.Field)
		}
		return nil, badMetadata("the body must be one JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, badMetadata("the body must be one JSON object")
	}
	return &reg, nil
}

// checkRegistration validates metadata and returns the client to register.
func (s *Server) checkRegistration(reg *registration) (*client, *registrationError) {
	switch n := len(reg.RedirectURIs); {
	case n == 0:
		return nil, &registrationError{http.StatusBadRequest, "invalid_redirect_uri", "redirect_uris is required"}
	case n > maxRedirectURIs:
		return nil, &registrationError{http.StatusBadRequest, "invalid_redirect_uri", fmt.Sprintf("at most %d redirect_uris", maxRedirectURIs)}
	}
	total := 0
	for i, u := range reg.RedirectURIs {
		if len(u) > maxRedirectURIBytes {
			return nil, &registrationError{http.StatusBadRequest, "invalid_redirect_uri", fmt.Sprintf("redirect_uris[%d] must be at most %d bytes", i, maxRedirectURIBytes)}
		}
		if err := checkRedirectURI(u); err != nil {
			return nil, &registrationError{http.StatusBadRequest, "invalid_redirect_uri", fmt.Sprintf("redirect_uris[%d] %s", i, err)}
		}
		total += len(u)
	}
	if total > maxRedirectURIsBytes {
		return nil, &registrationError{http.StatusBadRequest, "invalid_redirect_uri", fmt.Sprintf("redirect_uris must be at most %d bytes together", maxRedirectURIsBytes)}
	}
	if utf8.RuneCountInString(reg.ClientName) > maxClientName || !utf8.ValidString(reg.ClientName) {
		return nil, badMetadata("client_name must be at most %d characters", maxClientName)
	}
	for _, r := range reg.ClientName {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return nil, badMetadata("client_name must not contain control characters")
		}
	}
	method := reg.TokenEndpointAuthMethod
	switch method {
	case "":
		method = "client_secret_basic" // RFC 7591 §2
	case "none", "client_secret_basic", "client_secret_post":
	default:
		return nil, badMetadata("token_endpoint_auth_method must be none, client_secret_basic or client_secret_post")
	}
	grantTypes := reg.GrantTypes
	if len(grantTypes) == 0 {
		grantTypes = []string{"authorization_code", "refresh_token"}
	}
	for _, g := range grantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return nil, badMetadata("grant_types may hold only authorization_code and refresh_token")
		}
	}
	if !slices.Contains(grantTypes, "authorization_code") {
		return nil, badMetadata("grant_types must include authorization_code")
	}
	responseTypes := reg.ResponseTypes
	if len(responseTypes) == 0 {
		responseTypes = []string{"code"}
	}
	for _, rt := range responseTypes {
		if rt != "code" {
			return nil, badMetadata("response_types may hold only code")
		}
	}
	scopes, err := s.parseScopes(reg.Scope)
	if err != nil {
		return nil, badMetadata("scope: %s", err)
	}
	slices.Sort(grantTypes)
	return &client{
		Name:          reg.ClientName,
		RedirectURIs:  reg.RedirectURIs,
		AuthMethod:    method,
		GrantTypes:    slices.Compact(grantTypes),
		ResponseTypes: slices.Compact(responseTypes),
		Scope:         joinScopes(scopes),
	}, nil
}
