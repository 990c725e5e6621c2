package storedest

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/cursor"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/resource"
	"github.com/pictorhq/pictor/origin/respond"
	"github.com/pictorhq/pictor/origin/storage"
)

// maxBody bounds a request body: every field at its limit fits many times.
const maxBody = 64 << 10

// TimeFormat is how answers write timestamps: UTC, milliseconds (as every
// management resource).
const TimeFormat = resource.TimeFormat

// MaxTestError is the longest last_test_error, in characters.
const MaxTestError = 1000

// DefaultTestTimeout bounds a connection test when Handler.TestTimeout is
// 0: a backstop, origin/storage bounds its tests itself (30 s by default).
const DefaultTestTimeout = time.Minute

// Handler serves /v1/storage-destinations.
type Handler struct {
	Store   *Store
	Cursors cursor.Codec
	// Test runs the connection test (origin/storage): it connects with c
	// (secret opened; for aws_s3 the role and the organization's external
	// id) and writes a test object. It runs on create, when any
	// connection_info setting changes and when a destination is enabled
	// again. Required for those saves (without it they answer 500).
	Test func(ctx context.Context, c storage.Connection) error
	// Describe puts a failed test's error in the caller's words (what the
	// provider said); nil uses err.Error(). The result is stored as
	// last_test_error and answered, at most MaxTestError characters, with
	// the secret access key blanked out should it appear.
	Describe func(error) string
	// AllowPrivate accepts other_s3_compatible endpoints on loopback or
	// private address literals (--allow-private-urls).
	AllowPrivate bool
	// TestTimeout bounds one connection test; 0 is DefaultTestTimeout. A
	// test that runs out fails like any other.
	TestTimeout time.Duration
}

// View is the JSON form of a destination. connection_info holds the
// provider's settings only, never the secret access key.
type View struct {
	ID                  string         `json:"id"`
	Name                string         `json:"name"`
	Enabled             bool           `json:"enabled"`
	HctiStorageDisabled bool           `json:"hcti_storage_disabled"`
	ConnectionInfo      map[string]any `json:"connection_info"`
	LastTestedAt        *string        `json:"last_tested_at"`
	LastTestSucceeded   *bool          `json:"last_test_succeeded"`
	LastTestError       *string        `json:"last_test_error"`
	resource.Stamps
}

// NewView returns the public form of d.
func NewView(d *Destination) View {
	v := View{
		ID:                  d.ID,
		Name:                d.Name,
		Enabled:             !d.Disabled,
		HctiStorageDisabled: d.HctiStorageDisabled,
		ConnectionInfo:      connectionView(d.Connection),
		Stamps:              resource.NewStamps(d.CreatedAt, d.UpdatedAt),
	}
	if !d.LastTestedAt.IsZero() {
		at, ok := d.LastTestedAt.UTC().Format(TimeFormat), d.LastTestSucceeded
		v.LastTestedAt, v.LastTestSucceeded = &at, &ok
		if !ok {
			msg := d.LastTestError
			v.LastTestError = &msg
		}
	}
	return v
}

// connectionView answers connection_info: provider, bucket, key_prefix
// (null at the bucket's root) and the provider's own settings, with
// cloudflare_jurisdiction null for the default one. Secrets are not
// settings.
func connectionView(c storage.Connection) map[string]any {
	m := map[string]any{"provider": c.Provider, "bucket": c.Bucket, "key_prefix": orNull(c.KeyPrefix)}
	for _, f := range takes[c.Provider] {
		switch f {
		case fRegion:
			m[f] = c.Region
		case fRoleARN:
			m[f] = c.RoleARN
		case fAccountID:
			m[f] = c.CloudflareAccountID
		case fJurisdiction:
			m[f] = orNull(c.CloudflareJurisdiction)
		case fEndpoint:
			m[f] = c.Endpoint
		case fPathStyle:
			m[f] = c.ForcePathStyle
		case fAccessKeyID:
			m[f] = c.AccessKeyID
		}
	}
	return m
}

func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// CheckPlan returns a 403 *apierr.Error unless the organization's plan
// includes delivery options (plan.Plan.Delivery): storage destinations need
// the smallest such plan or a larger one (spec §2.2 storage_destination_id,
// §5 rule 3), whatever the key's permissions. The message names that plan
// and its allowance, and the organization's plan. Every handler checks it;
// the route table runs it too (api.Route.Check), before the rate limit, so
// that a refusal costs no allowance.
func CheckPlan(o *org.Org) error { return org.RequireDelivery(o, "Storage destinations") }

// routes are the destinations' routes in the resource kit. Every route
// answers 403 first unless the organization's plan includes delivery
// options (CheckPlan).
var routes = resource.Routes[Destination, View]{
	Name: "storage destination", Check: CheckPlan, Errors: storeError, View: NewView,
	Scope: "storage-destinations/", ID: func(x *Destination) string { return x.ID },
}

func (h *Handler) parse(w http.ResponseWriter, r *http.Request) (Request, error) {
	o, err := field.DecodeJSON(w, r, maxBody)
	if err != nil {
		return Request{}, err
	}
	return ParseRequest(o, Options{AllowPrivate: h.AllowPrivate})
}

// storeError maps the store's errors to answers.
func storeError(err error) error {
	if errors.Is(err, ErrChanged) {
		e := apierr.New(http.StatusConflict, "The storage destination was changed by another request meanwhile; read it and try again")
		e.Cause = err
		return e
	}
	return resource.NotFound(err, ErrNotFound, "Storage destination not found")
}

const retainPath = "connection_info." + fRetain

// Create handles POST /v1/storage-destinations. The connection is tested
// first; an enabled destination whose test fails is not saved (400).
func (h *Handler) Create(w http.ResponseWriter, r *http.Request) error {
	return routes.Collection(w, r, func(p *auth.Principal) (*Destination, error) {
		req, err := h.parse(w, r)
		if err == nil && req.RetainSecret {
			err = apierr.Field(retainPath, "is for updates: a new destination has no stored secret access key to keep; send secret_access_key")
		}
		if err != nil {
			return nil, err
		}
		conn, err := h.connect(r.Context(), p.Org.ID, req.Connection)
		if err != nil {
			return nil, err
		}
		res, err := h.test(r.Context(), p.Org.ID, "", conn, !req.Disabled)
		if err != nil {
			return nil, err
		}
		return h.Store.Create(r.Context(), p.Org.ID, input(req, conn, res))
	})
}

func input(req Request, conn storage.Connection, res *TestResult) Input {
	return Input{Name: req.Name, Disabled: req.Disabled, HctiStorageDisabled: req.HctiStorageDisabled, Connection: conn, Test: res}
}

// connect returns conn as a test connects with it: for aws_s3, with the
// organization's external id.
func (h *Handler) connect(ctx context.Context, orgID string, conn storage.Connection) (storage.Connection, error) {
	if conn.Provider != storage.AWSS3 {
		return conn, nil
	}
	var err error
	conn.ExternalID, err = h.Store.ExternalID(ctx, orgID)
	return conn, err
}

// Update handles POST /v1/storage-destinations/{id}: a full replacement.
// The connection is tested again when a connection setting changes (the
// secret access key included) or the destination is enabled again; an
// enabled destination whose test fails stays as it was (400).
func (h *Handler) Update(w http.ResponseWriter, r *http.Request) error {
	return routes.One(w, r, func(p *auth.Principal, id string) (*Destination, error) {
		req, err := h.parse(w, r)
		if err != nil {
			return nil, err
		}
		return h.Store.Update(r.Context(), p.Org.ID, id, func(cur *Destination) (Input, error) {
			return h.replace(r.Context(), p.Org.ID, cur, req)
		})
	})
}

// replace is what an update req stores over cur: the stored secret access
// key kept if req retains it (and may), the connection tested if it
// changed or the destination is enabled again.
func (h *Handler) replace(ctx context.Context, orgID string, cur *Destination, req Request) (Input, error) {
	was, err := h.Store.Connection(cur)
	if errors.Is(err, ErrSecret) && !req.RetainSecret {
		// A secret that no longer opens (another master key) is
		// replaced by the one sent; the connection counts as changed.
		slog.WarnContext(ctx, "storage destination secret cannot be opened; replacing it", "destination_id", cur.ID, "error", err)
		was, err = cur.Connection, nil
	}
	if errors.Is(err, ErrSecret) {
		e := apierr.Field(retainPath, "cannot keep the stored secret access key: it can no longer be opened; send secret_access_key")
		e.Cause = err
		return Input{}, e
	}
	if err != nil {
		return Input{}, err
	}
	conn := req.Connection
	if req.RetainSecret {
		switch {
		case !cur.HasSecret:
			return Input{}, apierr.Field(retainPath, "has no stored secret access key to keep (the destination's provider is %s); send secret_access_key", cur.Connection.Provider)
		case conn.Provider != cur.Connection.Provider:
			return Input{}, apierr.Field(retainPath, "cannot keep a %s secret access key for provider %s; send secret_access_key", cur.Connection.Provider, conn.Provider)
		case conn.AccessKeyID != cur.Connection.AccessKeyID:
			return Input{}, apierr.Field(retainPath, "cannot keep the stored secret access key for another access_key_id; send secret_access_key")
		case conn.Endpoint != cur.Connection.Endpoint:
			// The key is only ever used where it was given: a request
			// signed for a host of the caller's could be relayed to
			// the real one.
			return Input{}, apierr.Field(retainPath, "cannot keep the stored secret access key for another endpoint; send secret_access_key")
		}
		conn.SecretAccessKey = was.SecretAccessKey
	}
	if conn, err = h.connect(ctx, orgID, conn); err != nil {
		return Input{}, err
	}
	in := input(req, conn, nil)
	if conn != was || (cur.Disabled && !req.Disabled) {
		if in.Test, err = h.test(ctx, orgID, cur.ID, conn, !req.Disabled); err != nil {
			return Input{}, err
		}
	}
	return in, nil
}

// test runs the connection test of conn. A failure is a result to record,
// and for a destination to be enabled also a 400 naming connection_info.
func (h *Handler) test(ctx context.Context, orgID, id string, conn storage.Connection, enabled bool) (*TestResult, error) {
	if h.Test == nil {
		return nil, apierr.Internal(errors.New("storedest: Handler.Test is not set"))
	}
	// What the request allowed but the storage package cannot use (its
	// rules may grow) is the request's fault, as any invalid field.
	if err := conn.Validate(); err != nil {
		var ce *storage.ConnectionError
		if errors.As(err, &ce) && ce.Field != "external_id" {
			return nil, apierr.Field("connection_info."+ce.Field, "%s", ce.Problem)
		}
		return nil, apierr.Internal(err)
	}
	timeout := h.TestTimeout
	if timeout <= 0 {
		timeout = DefaultTestTimeout
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	err := h.Test(tctx, conn)
	cancel()
	if ctx.Err() != nil {
		// The caller is gone (or the server stops): no result to keep.
		return nil, ctx.Err()
	}
	res := &TestResult{At: h.Store.now().UTC(), Succeeded: err == nil}
	if err == nil {
		return res, nil
	}
	res.Error = h.describe(err, conn.SecretAccessKey)
	slog.InfoContext(ctx, "storage destination connection test failed", "org_id", orgID, "destination_id", id,
		"provider", string(conn.Provider), "bucket", conn.Bucket, "enabled", enabled, "error", res.Error)
	if !enabled {
		return res, nil
	}
	return res, &apierr.Error{
		Status:  http.StatusBadRequest,
		Message: "Connection test failed: " + res.Error,
		Fields:  []apierr.FieldError{{Path: "connection_info", Message: "connection test failed: " + res.Error}},
	}
}

// describe words a failed test for last_test_error: one line of at most
// MaxTestError characters, never holding the secret.
func (h *Handler) describe(err error, secret string) string {
	var s string
	if h.Describe != nil {
		s = h.Describe(err)
	}
	if strings.TrimSpace(s) == "" {
		s = err.Error()
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if secret != "" {
		s = strings.ReplaceAll(s, secret, "[redacted]")
	}
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if s == "" {
		s = "the connection test failed"
	}
	if utf8.RuneCountInString(s) > MaxTestError {
		s = string([]rune(s)[:MaxTestError-1]) + "…"
	}
	return s
}

// Get handles GET /v1/storage-destinations/{id}.
func (h *Handler) Get(w http.ResponseWriter, r *http.Request) error {
	return routes.One(w, r, func(p *auth.Principal, id string) (*Destination, error) {
		return h.Store.Get(r.Context(), p.Org.ID, id)
	})
}

// Delete handles DELETE /v1/storage-destinations/{id}. Objects written to
// the bucket stay there.
func (h *Handler) Delete(w http.ResponseWriter, r *http.Request) error {
	return routes.Remove(w, r, func(p *auth.Principal, id string) error {
		_, err := h.Store.Delete(r.Context(), p.Org.ID, id)
		return err
	})
}

// ExternalIDView is the answer of GET /v1/storage-destinations/aws-external-id.
type ExternalIDView struct {
	ExternalID string `json:"external_id"`
}

// ExternalID handles GET /v1/storage-destinations/aws-external-id: the
// organization's external id, which the trust policy of an aws_s3
// destination's role must require (sts:ExternalId).
func (h *Handler) ExternalID(w http.ResponseWriter, r *http.Request) error {
	p, err := routes.Caller(r)
	if err != nil {
		return err
	}
	ext, err := h.Store.ExternalID(r.Context(), p.Org.ID)
	if err != nil {
		return err
	}
	respond.JSON(w, r, http.StatusOK, ExternalIDView{ExternalID: ext})
	return nil
}

// List handles GET /v1/storage-destinations: newest first, disabled ones
// included.
func (h *Handler) List(w http.ResponseWriter, r *http.Request) error {
	return routes.List(w, r, h.Cursors, h.Store.List)
}
