package storedest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/pebblekv"
	"github.com/pictorhq/pictor/kv/pgkv/pgtest"
	"github.com/pictorhq/pictor/origin/api"
	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/cursor"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/perm"
	"github.com/pictorhq/pictor/origin/ratelimit"
	"github.com/pictorhq/pictor/origin/seal"
	"github.com/pictorhq/pictor/origin/storage"
	"github.com/pictorhq/pictor/origin/storedest"
)

func TestMain(m *testing.M) {
	// The router's access log and the answers' debug lines are not what
	// these tests look at (TestSecretNeverShown captures them itself).
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

// orgs authenticates one key per api_id "<org>-<plan>[-readonly]": the
// organization is org-<org> whatever the plan, so "acme-free" is acme
// after a downgrade. A "-readonly" key holds storage_destinations:read
// only; the others hold everything.
type orgs struct{}

func (orgs) Authenticate(_ context.Context, apiID, secret string) (*auth.Principal, error) {
	name, readOnly := strings.CutSuffix(apiID, "-readonly")
	i := strings.LastIndexByte(name, '-')
	if secret != "s3cret" || i < 0 {
		return nil, auth.ErrInvalid
	}
	o := &org.Org{ID: "org-" + name[:i], Name: name[:i], Plan: name[i+1:]}
	g := perm.Grant{AllFuture: true}
	if readOnly {
		g = perm.Grant{Permissions: []perm.Permission{perm.StorageDestinationsRead}}
	}
	return &auth.Principal{Org: o, KeyID: "key-" + apiID, APIID: apiID, Grant: g}, nil
}

var (
	pro        = &apitest.Creds{APIID: "acme-pro", APIKey: "s3cret"}
	downgraded = &apitest.Creds{APIID: "acme-basic", APIKey: "s3cret"}
	readOnly   = &apitest.Creds{APIID: "acme-pro-readonly", APIKey: "s3cret"}
	other      = &apitest.Creds{APIID: "rival-pro", APIKey: "s3cret"}
	scale      = &apitest.Creds{APIID: "big-scale", APIKey: "s3cret"}
	free       = &apitest.Creds{APIID: "tiny-free", APIKey: "s3cret"}
)

func orgID(c *apitest.Creds) string {
	name := strings.TrimSuffix(c.APIID, "-readonly")
	return "org-" + name[:strings.LastIndexByte(name, '-')]
}

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// tester stands for origin/storage's connection test. The real S3 path
// (a versitygw server on loopback) is tested in origin/storage and in the
// origin's integration test; this package's tests only need to know what
// the test was given and to make it fail: it records each Connection and
// returns the error configured for its bucket.
type tester struct {
	mu    sync.Mutex
	calls []storage.Connection
	fail  map[string]error // by bucket
}

func (tt *tester) test(ctx context.Context, c storage.Connection) error {
	tt.mu.Lock()
	tt.calls = append(tt.calls, c)
	err := tt.fail[c.Bucket]
	tt.mu.Unlock()
	if errors.Is(err, context.DeadlineExceeded) {
		<-ctx.Done() // a bucket that never answers
		return fmt.Errorf("put test object: %w", ctx.Err())
	}
	return err
}

func (tt *tester) failBucket(bucket string, err error) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if tt.fail == nil {
		tt.fail = map[string]error{}
	}
	tt.fail[bucket] = err
}

// take returns the tests run since the last take.
func (tt *tester) take() []storage.Connection {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	out := tt.calls
	tt.calls = nil
	return out
}

// site serves the storage destination routes as the origin does.
type site struct {
	base   string
	h      *storedest.Handler
	db     kv.Store
	clock  *apitest.Clock // the store's
	limits *apitest.Clock // the rate limiter's: moved a window on by do unless burst
	burst  bool
	tests  *tester
}

func start(t *testing.T) *site {
	t.Helper()
	db, err := pebblekv.Open(filepath.Join(t.TempDir(), "db"), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	box, err := seal.New(bytes.Repeat([]byte{1}, 32))
	if err != nil {
		t.Fatal(err)
	}
	s := &site{db: db, clock: apitest.NewClock(epoch), limits: apitest.NewClock(epoch), tests: &tester{}}
	s.h = &storedest.Handler{
		Store:    storedest.NewStore(db, box, s.clock.Now),
		Cursors:  cursor.New(box.MACKey("cursor")),
		Test:     s.tests.test,
		Describe: func(err error) string { return "the bucket answered: " + err.Error() },
	}
	srv := httptest.NewServer(api.New(api.Config{Authenticator: orgs{}, Limiter: ratelimit.NewMemory(s.limits.Now)}, routes(s.h)))
	t.Cleanup(srv.Close)
	s.base = srv.URL
	return s
}

// routes is the route table the origin registers.
func routes(h *storedest.Handler) []api.Route {
	delivery := func(p *auth.Principal) error { return storedest.CheckPlan(p.Org) }
	return []api.Route{
		{Method: http.MethodPost, Pattern: "/v1/storage-destinations", Permission: perm.StorageDestinationsCreateUpdate, Group: ratelimit.StorageDestinationWrite, Check: delivery, Serve: h.Create},
		{Method: http.MethodGet, Pattern: "/v1/storage-destinations", Permission: perm.StorageDestinationsRead, Group: ratelimit.StorageDestinationRead, Check: delivery, Serve: h.List},
		{Method: http.MethodGet, Pattern: "/v1/storage-destinations/aws-external-id", Permission: perm.StorageDestinationsRead, Group: ratelimit.StorageDestinationRead, Check: delivery, Serve: h.ExternalID},
		{Method: http.MethodGet, Pattern: "/v1/storage-destinations/{id}", Permission: perm.StorageDestinationsRead, Group: ratelimit.StorageDestinationRead, Check: delivery, Serve: h.Get},
		{Method: http.MethodPost, Pattern: "/v1/storage-destinations/{id}", Permission: perm.StorageDestinationsCreateUpdate, Group: ratelimit.StorageDestinationWrite, Check: delivery, Serve: h.Update},
		{Method: http.MethodDelete, Pattern: "/v1/storage-destinations/{id}", Permission: perm.StorageDestinationsDelete, Group: ratelimit.StorageDestinationWrite, Check: delivery, Serve: h.Delete},
	}
}

func (s *site) do(t *testing.T, r apitest.Request) *apitest.Response {
	t.Helper()
	if !s.burst {
		s.limits.Advance(ratelimit.Window)
	}
	return apitest.Do(t, s.base, r)
}

// view is a destination as the API shows it.
type view struct {
	ID                  string         `json:"id"`
	Name                string         `json:"name"`
	Enabled             bool           `json:"enabled"`
	HctiStorageDisabled bool           `json:"hcti_storage_disabled"`
	ConnectionInfo      map[string]any `json:"connection_info"`
	LastTestedAt        *string        `json:"last_tested_at"`
	LastTestSucceeded   *bool          `json:"last_test_succeeded"`
	LastTestError       *string        `json:"last_test_error"`
	CreatedAt           string         `json:"created_at"`
	UpdatedAt           string         `json:"updated_at"`
}

type page struct {
	Data       []view `json:"data"`
	Pagination struct {
		NextPageStart *string `json:"next_page_start"`
	} `json:"pagination"`
}

func path(id string) string {
	if id == "" {
		return "/v1/storage-destinations"
	}
	return "/v1/storage-destinations/" + id
}

// save creates a destination (id "") or replaces one and returns it.
func (s *site) save(t *testing.T, creds *apitest.Creds, id string, body map[string]any) view {
	t.Helper()
	r := s.do(t, apitest.Request{Method: "POST", Path: path(id), Creds: creds, JSON: body})
	apitest.WantStatus(t, r, http.StatusOK)
	var v view
	r.Decode(t, &v)
	return v
}

func (s *site) get(t *testing.T, creds *apitest.Creds, id string) view {
	t.Helper()
	r := s.do(t, apitest.Request{Method: "GET", Path: path(id), Creds: creds})
	apitest.WantStatus(t, r, http.StatusOK)
	var v view
	r.Decode(t, &v)
	return v
}

// connection is what the render path would connect to d with.
func (s *site) connection(t *testing.T, creds *apitest.Creds, id string) storage.Connection {
	t.Helper()
	d, err := s.h.Store.Get(t.Context(), orgID(creds), id)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.h.Store.Connection(d)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const (
	account = "0123456789abcdef0123456789abcdef"
	role    = "arn:aws:iam::123456789012:role/pictor-writer"
)

// conns are valid connection_info objects per provider.
var conns = map[storage.Provider]map[string]any{
	storage.AWSS3: {"provider": "aws_s3", "bucket": "aws-renders", "region": "eu-west-1", "role_arn": role},
	storage.CloudflareR2: {"provider": "cloudflare_r2", "bucket": "r2-renders", "cloudflare_account_id": account,
		"access_key_id": "AKR2", "secret_access_key": "r2-secret"},
	storage.BackblazeB2:        {"provider": "backblaze_b2", "bucket": "b2-renders", "region": "us-west-004", "access_key_id": "AKB2", "secret_access_key": "b2-secret"},
	storage.DigitalOceanSpaces: {"provider": "digitalocean_spaces", "bucket": "do-renders", "region": "nyc3", "access_key_id": "AKDO", "secret_access_key": "do-secret"},
	storage.Wasabi:             {"provider": "wasabi", "bucket": "wasabi-renders", "region": "eu-central-1", "access_key_id": "AKW", "secret_access_key": "wasabi-secret"},
	storage.GoogleCloudStorage: {"provider": "google_cloud_storage", "bucket": "gcs-renders", "access_key_id": "GOOG1", "secret_access_key": "gcs-secret"},
	storage.OtherS3Compatible: {"provider": "other_s3_compatible", "bucket": "other-renders", "endpoint": "https://s3.example.com",
		"access_key_id": "AKO", "secret_access_key": "other-secret"},
}

// drop removes a member in with.
var drop = &struct{}{}

// with returns a copy of m with members set (or dropped).
func with(m map[string]any, kvs ...any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kvs); i += 2 {
		if kvs[i+1] == drop {
			delete(out, kvs[i].(string))
			continue
		}
		out[kvs[i].(string)] = kvs[i+1]
	}
	return out
}

// dest is a request: a name, the connection and top-level members.
func dest(name string, conn map[string]any, top ...any) map[string]any {
	return with(map[string]any{"name": name, "connection_info": conn}, top...)
}

// retained is the connection of an update that keeps the secret.
func retained(conn map[string]any, kvs ...any) map[string]any {
	return with(with(conn, "secret_access_key", drop, "retain_secret_access_key", true), kvs...)
}

// TestCreateEveryProvider: each provider's destination is tested with
// what it connects with (secret opened, external id for aws_s3), stored,
// and answered with its own settings and never the secret; Get and the
// render path's Store.Connection agree.
func TestCreateEveryProvider(t *testing.T) {
	s := start(t)
	var ext struct {
		ExternalID string `json:"external_id"`
	}
	s.do(t, apitest.Request{Method: "GET", Path: path("aws-external-id"), Creds: pro}).Decode(t, &ext)
	tests := []struct {
		name string
		conn map[string]any
		info map[string]any
		want storage.Connection
	}{
		{"aws_s3", with(conns[storage.AWSS3], "key_prefix", "/cards//2026/", "region", "EU-West-1"),
			map[string]any{"provider": "aws_s3", "bucket": "aws-renders", "key_prefix": "cards/2026", "region": "eu-west-1", "role_arn": role},
			storage.Connection{Provider: storage.AWSS3, Bucket: "aws-renders", KeyPrefix: "cards/2026", Region: "eu-west-1", RoleARN: role, ExternalID: ext.ExternalID}},
		{"cloudflare_r2", with(conns[storage.CloudflareR2], "cloudflare_jurisdiction", "eu"),
			map[string]any{"provider": "cloudflare_r2", "bucket": "r2-renders", "key_prefix": nil, "cloudflare_account_id": account,
				"cloudflare_jurisdiction": "eu", "access_key_id": "AKR2"},
			storage.Connection{Provider: storage.CloudflareR2, Bucket: "r2-renders", CloudflareAccountID: account, CloudflareJurisdiction: "eu",
				AccessKeyID: "AKR2", SecretAccessKey: "r2-secret"}},
		{"cloudflare_r2 default jurisdiction", with(conns[storage.CloudflareR2], "cloudflare_jurisdiction", nil),
			map[string]any{"provider": "cloudflare_r2", "bucket": "r2-renders", "key_prefix": nil, "cloudflare_account_id": account,
				"cloudflare_jurisdiction": nil, "access_key_id": "AKR2"},
			storage.Connection{Provider: storage.CloudflareR2, Bucket: "r2-renders", CloudflareAccountID: account, AccessKeyID: "AKR2", SecretAccessKey: "r2-secret"}},
		{"backblaze_b2", conns[storage.BackblazeB2],
			map[string]any{"provider": "backblaze_b2", "bucket": "b2-renders", "key_prefix": nil, "region": "us-west-004", "access_key_id": "AKB2"},
			storage.Connection{Provider: storage.BackblazeB2, Bucket: "b2-renders", Region: "us-west-004", AccessKeyID: "AKB2", SecretAccessKey: "b2-secret"}},
		{"digitalocean_spaces", conns[storage.DigitalOceanSpaces],
			map[string]any{"provider": "digitalocean_spaces", "bucket": "do-renders", "key_prefix": nil, "region": "nyc3", "access_key_id": "AKDO"},
			storage.Connection{Provider: storage.DigitalOceanSpaces, Bucket: "do-renders", Region: "nyc3", AccessKeyID: "AKDO", SecretAccessKey: "do-secret"}},
		{"wasabi", with(conns[storage.Wasabi], "key_prefix", "a"),
			map[string]any{"provider": "wasabi", "bucket": "wasabi-renders", "key_prefix": "a", "region": "eu-central-1", "access_key_id": "AKW"},
			storage.Connection{Provider: storage.Wasabi, Bucket: "wasabi-renders", KeyPrefix: "a", Region: "eu-central-1", AccessKeyID: "AKW", SecretAccessKey: "wasabi-secret"}},
		{"google_cloud_storage", conns[storage.GoogleCloudStorage],
			map[string]any{"provider": "google_cloud_storage", "bucket": "gcs-renders", "key_prefix": nil, "access_key_id": "GOOG1"},
			storage.Connection{Provider: storage.GoogleCloudStorage, Bucket: "gcs-renders", AccessKeyID: "GOOG1", SecretAccessKey: "gcs-secret"}},
		{"other_s3_compatible", with(conns[storage.OtherS3Compatible], "endpoint", "HTTPS://S3.Example.com:443/"),
			map[string]any{"provider": "other_s3_compatible", "bucket": "other-renders", "key_prefix": nil, "endpoint": "https://s3.example.com",
				"region": "us-east-1", "force_path_style": true, "access_key_id": "AKO"},
			storage.Connection{Provider: storage.OtherS3Compatible, Bucket: "other-renders", Endpoint: "https://s3.example.com", Region: "us-east-1",
				ForcePathStyle: true, AccessKeyID: "AKO", SecretAccessKey: "other-secret"}},
		{"other_s3_compatible virtual hosts", with(conns[storage.OtherS3Compatible], "region", "garage", "force_path_style", false),
			map[string]any{"provider": "other_s3_compatible", "bucket": "other-renders", "key_prefix": nil, "endpoint": "https://s3.example.com",
				"region": "garage", "force_path_style": false, "access_key_id": "AKO"},
			storage.Connection{Provider: storage.OtherS3Compatible, Bucket: "other-renders", Endpoint: "https://s3.example.com", Region: "garage",
				AccessKeyID: "AKO", SecretAccessKey: "other-secret"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := s.do(t, apitest.Request{Method: "POST", Path: path(""), Creds: pro, JSON: dest("Renders of "+tc.name, tc.conn)})
			apitest.WantStatus(t, r, http.StatusOK)
			if cc, p := r.Header.Get("Cache-Control"), r.Header.Get("RateLimit-Policy"); cc != "no-store" || p != `"storage-destination:write";q=20;w=60` {
				t.Fatalf("Cache-Control %q, RateLimit-Policy %q", cc, p)
			}
			if strings.Contains(strings.ToLower(string(r.Body)), "secret") {
				t.Fatalf("the answer mentions the secret: %s", r.Body)
			}
			raw := r.Object(t)
			want := map[string]any{"name": "Renders of " + tc.name, "enabled": true, "hcti_storage_disabled": false, "connection_info": tc.info,
				"last_tested_at": "2026-03-01T12:00:00.000Z", "last_test_succeeded": true, "last_test_error": nil,
				"created_at": "2026-03-01T12:00:00.000Z", "updated_at": "2026-03-01T12:00:00.000Z"}
			id, _ := raw["id"].(string)
			delete(raw, "id")
			if !reflect.DeepEqual(raw, want) {
				t.Fatalf("answer\n got %v\nwant %v", raw, want)
			}
			if got := s.tests.take(); len(got) != 1 || got[0] != tc.want {
				t.Fatalf("tested with %+v, want %+v", got, tc.want)
			}
			g := s.do(t, apitest.Request{Method: "GET", Path: path(id), Creds: pro})
			apitest.WantStatus(t, g, http.StatusOK)
			if !bytes.Equal(g.Body, r.Body) || g.Header.Get("RateLimit-Policy") != `"storage-destination:read";q=100;w=60` {
				t.Fatalf("read back %s (%s)", g.Body, g.Header.Get("RateLimit-Policy"))
			}
			if c := s.connection(t, pro, id); c != tc.want {
				t.Fatalf("Store.Connection %+v, want %+v", c, tc.want)
			}
			d, _ := s.h.Store.Get(t.Context(), orgID(pro), id)
			if d.Disabled || d.HctiStorageDisabled {
				t.Fatalf("stored %+v", d)
			}
		})
	}

	// The answer is a valid update: sent back with the secret kept, it
	// changes nothing but updated_at and runs no test.
	v := s.save(t, pro, "", dest("Round trip", with(conns[storage.CloudflareR2], "key_prefix", "x/y"), "hcti_storage_disabled", true))
	s.tests.take()
	s.clock.Advance(time.Second)
	back := retained(v.ConnectionInfo)
	again := s.save(t, pro, v.ID, map[string]any{"name": v.Name, "disabled": !v.Enabled, "hcti_storage_disabled": v.HctiStorageDisabled, "connection_info": back})
	v.UpdatedAt = "2026-03-01T12:00:01.000Z"
	if !reflect.DeepEqual(again, v) || len(s.tests.take()) != 0 {
		t.Fatalf("round trip\n got %+v\nwant %+v", again, v)
	}
}

// TestValidation: over HTTP, invalid requests are 400s naming each field
// (connection_info.<field> inside the connection), nothing is tested or
// stored; bodies that are not requests are refused as elsewhere.
func TestValidation(t *testing.T) {
	s := start(t)
	for _, tc := range []struct {
		name   string
		body   map[string]any
		fields []string
	}{
		{"empty", map[string]any{}, []string{"name", "connection_info"}},
		{"several at once", dest("ab", with(conns[storage.Wasabi], "bucket", "Bad_Bucket", "region", "eu central", "key_prefix", "a/../b",
			"secret_access_key", drop, "endpoint", "https://x.example")),
			[]string{"name", "connection_info.bucket", "connection_info.key_prefix", "connection_info.endpoint", "connection_info.region",
				"connection_info.secret_access_key"}},
		{"aws_s3 without its settings", dest("abc", map[string]any{"provider": "aws_s3", "bucket": "abc", "access_key_id": "AK"}),
			[]string{"connection_info.region", "connection_info.role_arn", "connection_info.access_key_id"}},
		{"private endpoint", dest("abc", with(conns[storage.OtherS3Compatible], "endpoint", "http://127.0.0.1:9000")), []string{"connection_info.endpoint"}},
		{"retain on create", dest("abc", retained(conns[storage.Wasabi])), []string{"connection_info.retain_secret_access_key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.do(t, apitest.Request{Method: "POST", Path: path(""), Creds: pro, JSON: tc.body})
			for _, f := range tc.fields {
				apitest.WantField(t, r, f)
			}
			var body struct {
				ValidationErrors []struct{ Path string } `json:"validation_errors"`
			}
			r.Decode(t, &body)
			if len(body.ValidationErrors) != len(tc.fields) {
				t.Fatalf("validation errors %+v, want exactly %v", body.ValidationErrors, tc.fields)
			}
		})
	}
	for _, tc := range []struct {
		name, raw, ct string
		status        int
	}{
		{"not JSON", "{", "application/json", 400},
		{"not an object", `[{"name":"abc"}]`, "application/json", 400},
		{"a form", "name=abc", "application/x-www-form-urlencoded", 415},
		{"too large", `{"name":"` + strings.Repeat("x", 70<<10) + `"}`, "application/json", 413},
	} {
		t.Run(tc.name, func(t *testing.T) {
			apitest.WantError(t, s.do(t, apitest.Request{Method: "POST", Path: path(""), Creds: pro, Raw: tc.raw, ContentType: tc.ct}), tc.status)
		})
	}
	// The kit's id check (resource.TestRoutesAdmission), in the
	// destinations' words.
	bad := s.do(t, apitest.Request{Method: "POST", Path: path("not-an-id"), Creds: pro, JSON: dest("abc", conns[storage.Wasabi])})
	apitest.WantField(t, bad, "id")
	apitest.WantMessage(t, apitest.WantError(t, bad, http.StatusBadRequest), "is not a valid storage destination id")
	// The external id's path is not an id for the other methods.
	apitest.WantField(t, s.do(t, apitest.Request{Method: "DELETE", Path: path("aws-external-id"), Creds: pro}), "id")

	// Permissions are the router's: a read-only key reads, writes nothing.
	apitest.WantStatus(t, s.do(t, apitest.Request{Method: "GET", Path: path(""), Creds: readOnly}), 200)
	apitest.WantStatus(t, s.do(t, apitest.Request{Method: "GET", Path: path("aws-external-id"), Creds: readOnly}), 200)
	apitest.WantError(t, s.do(t, apitest.Request{Method: "POST", Path: path(""), Creds: readOnly, JSON: dest("abc", conns[storage.Wasabi])}), 403)

	if got := s.tests.take(); len(got) != 0 {
		t.Fatalf("invalid requests were tested: %+v", got)
	}
	if list, _, _ := s.h.Store.List(t.Context(), orgID(pro), "", 10); len(list) != 0 {
		t.Fatalf("invalid requests stored %d destinations", len(list))
	}
}

// TestRetain: retain_secret_access_key keeps the stored secret for the
// same provider, access key id (and endpoint); every other use is a 400
// naming the field, after which the destination is as it was.
func TestRetain(t *testing.T) {
	s := start(t)
	r2, wasabi, otherS3 := conns[storage.CloudflareR2], conns[storage.Wasabi], conns[storage.OtherS3Compatible]
	tests := []struct {
		name       string
		start      map[string]any
		update     map[string]any
		field      string // "" for 200
		tested     bool
		wantSecret string
	}{
		{"keeps the secret", r2, retained(r2), "", false, "r2-secret"},
		{"keeps it for another bucket", r2, retained(r2, "bucket", "r2-other"), "", true, "r2-secret"},
		{"keeps it in another jurisdiction", r2, retained(r2, "cloudflare_jurisdiction", "fedramp"), "", true, "r2-secret"},
		{"keeps it for another region", wasabi, retained(wasabi, "region", "us-east-1"), "", true, "wasabi-secret"},
		{"keeps it for the same endpoint", otherS3, retained(otherS3, "endpoint", "HTTPS://s3.example.com/", "bucket", "other-two"), "", true, "other-secret"},
		{"a new secret replaces it", r2, with(r2, "secret_access_key", "r2-secret-2"), "", true, "r2-secret-2"},
		{"an empty secret with retain", r2, with(r2, "secret_access_key", "", "retain_secret_access_key", true), "", false, "r2-secret"},
		{"retain and a secret", r2, with(r2, "retain_secret_access_key", true), "connection_info.retain_secret_access_key", false, "r2-secret"},
		{"neither", r2, with(r2, "secret_access_key", drop), "connection_info.secret_access_key", false, "r2-secret"},
		{"another access key id", r2, retained(r2, "access_key_id", "AKR2-NEW"), "connection_info.retain_secret_access_key", false, "r2-secret"},
		{"another provider", wasabi, retained(conns[storage.BackblazeB2], "access_key_id", "AKW"), "connection_info.retain_secret_access_key", false, "wasabi-secret"},
		{"another endpoint", otherS3, retained(otherS3, "endpoint", "https://attacker.example"), "connection_info.retain_secret_access_key", false, "other-secret"},
		{"from aws_s3", conns[storage.AWSS3], retained(r2), "connection_info.retain_secret_access_key", false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := s.save(t, pro, "", dest("Renders", tc.start))
			s.tests.take()
			s.clock.Advance(time.Minute)
			r := s.do(t, apitest.Request{Method: "POST", Path: path(v.ID), Creds: pro, JSON: dest("Renders", tc.update)})
			if tc.field != "" {
				apitest.WantField(t, r, tc.field)
				if got := s.get(t, pro, v.ID); !reflect.DeepEqual(got, v) {
					t.Fatalf("after a refused update\n got %+v\nwant %+v", got, v)
				}
			} else {
				apitest.WantStatus(t, r, http.StatusOK)
			}
			if got := s.tests.take(); (len(got) == 1) != tc.tested || len(got) > 1 || (tc.tested && got[0].SecretAccessKey != tc.wantSecret) {
				t.Fatalf("tests %+v, want tested=%v with %q", got, tc.tested, tc.wantSecret)
			}
			if c := s.connection(t, pro, v.ID); c.SecretAccessKey != tc.wantSecret {
				t.Fatalf("stored secret %q, want %q", c.SecretAccessKey, tc.wantSecret)
			}
		})
	}
}

// TestFullReplacement: what an update omits takes its default.
func TestFullReplacement(t *testing.T) {
	s := start(t)
	v := s.save(t, pro, "", dest("Renders", with(conns[storage.OtherS3Compatible], "key_prefix", "cards", "region", "garage", "force_path_style", false),
		"disabled", true, "hcti_storage_disabled", true))
	u := s.save(t, pro, v.ID, dest("Renders", retained(conns[storage.OtherS3Compatible])))
	want := map[string]any{"provider": "other_s3_compatible", "bucket": "other-renders", "key_prefix": nil, "endpoint": "https://s3.example.com",
		"region": "us-east-1", "force_path_style": true, "access_key_id": "AKO"}
	if !u.Enabled || u.HctiStorageDisabled || !reflect.DeepEqual(u.ConnectionInfo, want) {
		t.Fatalf("after a replacement %+v", u)
	}
	d, _ := s.h.Store.Get(t.Context(), orgID(pro), v.ID)
	if d.Disabled || d.HctiStorageDisabled || d.Revision != 2 {
		t.Fatalf("stored %+v", d)
	}
}

// TestTestOnChange: an update runs the connection test when a connection
// setting changes (jurisdiction and secret included) or the destination
// is enabled again, and only then; last_tested_at follows.
func TestTestOnChange(t *testing.T) {
	s := start(t)
	base := with(conns[storage.CloudflareR2], "key_prefix", "cards")
	tests := []struct {
		name     string
		disabled bool // the destination before the update
		update   map[string]any
		test     bool
	}{
		{"the same request", false, dest("Renders", base), false},
		{"name only", false, dest("Renamed", base), false},
		{"hcti_storage_disabled", false, dest("Renders", base, "hcti_storage_disabled", true), false},
		{"secret kept", false, dest("Renders", retained(base)), false},
		{"key_prefix spelled differently", false, dest("Renders", with(base, "key_prefix", "//cards/")), false},
		{"account id in capitals", false, dest("Renders", with(base, "cloudflare_account_id", strings.ToUpper(account))), false},
		{"jurisdiction default spelled out", false, dest("Renders", with(base, "cloudflare_jurisdiction", "default")), false},
		{"disabling", false, dest("Renders", base, "disabled", true), false},
		{"disabled, name only", true, dest("Renamed", base, "disabled", true), false},
		{"bucket", false, dest("Renders", with(base, "bucket", "r2-elsewhere")), true},
		{"key_prefix", false, dest("Renders", with(base, "key_prefix", "cards/v2")), true},
		{"key_prefix removed", false, dest("Renders", with(base, "key_prefix", drop)), true},
		{"jurisdiction", false, dest("Renders", with(base, "cloudflare_jurisdiction", "eu")), true},
		{"account id", false, dest("Renders", with(base, "cloudflare_account_id", strings.Repeat("f", 32))), true},
		{"secret", false, dest("Renders", with(base, "secret_access_key", "r2-secret-rotated")), true},
		{"access key", false, dest("Renders", with(base, "access_key_id", "AKR2-2", "secret_access_key", "r2-secret-2")), true},
		{"provider", false, dest("Renders", conns[storage.Wasabi]), true},
		{"enabling again", true, dest("Renders", base), true},
		{"disabled, bucket", true, dest("Renders", with(base, "bucket", "r2-elsewhere"), "disabled", true), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := s.save(t, pro, "", dest("Renders", base, "disabled", tc.disabled))
			created := s.tests.take()
			s.clock.Advance(time.Hour)
			u := s.save(t, pro, v.ID, tc.update)
			got := s.tests.take()
			if (len(got) == 1) != tc.test || len(got) > 1 {
				t.Fatalf("%d tests, want tested=%v", len(got), tc.test)
			}
			wantTested := *v.LastTestedAt
			if tc.test {
				wantTested = s.clock.Now().UTC().Format(storedest.TimeFormat)
				if want := s.connection(t, pro, v.ID); got[0] != want {
					t.Fatalf("tested %+v, stored %+v", got[0], want)
				}
			} else if c := s.connection(t, pro, v.ID); c != created[0] {
				t.Fatalf("connection changed without a test: %+v, was %+v", c, created[0])
			}
			if *u.LastTestedAt != wantTested || !*u.LastTestSucceeded || u.UpdatedAt == v.UpdatedAt {
				t.Fatalf("after the update %+v (last tested %s, want %s)", u, *u.LastTestedAt, wantTested)
			}
		})
	}
}

// TestFailingTest: an enabled destination whose test fails is not saved
// (400 with the provider's words on connection_info); a disabled one is,
// with the failure recorded; enabling it runs the test again.
func TestFailingTest(t *testing.T) {
	s := start(t)
	s.tests.failBucket("denied", errors.New("AccessDenied: Access Denied"))
	good := conns[storage.Wasabi]
	bad := with(good, "bucket", "denied")

	// Enabled and failing: nothing stored.
	r := s.do(t, apitest.Request{Method: "POST", Path: path(""), Creds: pro, JSON: dest("Renders", bad)})
	apitest.WantField(t, r, "connection_info")
	apitest.WantMessage(t, r.Object(t), "Connection test failed", "the bucket answered: AccessDenied: Access Denied")
	if list, _, _ := s.h.Store.List(t.Context(), orgID(pro), "", 10); len(list) != 0 {
		t.Fatalf("a failed enabled destination was stored: %+v", list)
	}

	// Disabled and failing: stored with the failure.
	v := s.save(t, pro, "", dest("Renders", bad, "disabled", true))
	if v.Enabled || v.LastTestSucceeded == nil || *v.LastTestSucceeded || v.LastTestError == nil ||
		*v.LastTestError != "the bucket answered: AccessDenied: Access Denied" || *v.LastTestedAt != "2026-03-01T12:00:00.000Z" {
		t.Fatalf("saved %+v", v)
	}

	// Enabling it while it still fails: 400, it stays as it was.
	s.clock.Advance(time.Minute)
	apitest.WantField(t, s.do(t, apitest.Request{Method: "POST", Path: path(v.ID), Creds: pro, JSON: dest("Renders", retained(bad))}), "connection_info")
	if got := s.get(t, pro, v.ID); !reflect.DeepEqual(got, v) {
		t.Fatalf("after a refused enabling\n got %+v\nwant %+v", got, v)
	}

	// Fixed: enabled, the success recorded.
	s.tests.failBucket("denied", nil)
	s.clock.Advance(time.Minute)
	u := s.save(t, pro, v.ID, dest("Renders", retained(bad)))
	if !u.Enabled || !*u.LastTestSucceeded || u.LastTestError != nil || *u.LastTestedAt != "2026-03-01T12:02:00.000Z" {
		t.Fatalf("enabled %+v", u)
	}

	// An enabled destination moved to a failing bucket stays where it was.
	s.tests.failBucket("denied", errors.New("NoSuchBucket"))
	apitest.WantField(t, s.do(t, apitest.Request{Method: "POST", Path: path(v.ID), Creds: pro, JSON: dest("Renamed", retained(bad, "bucket", "denied", "region", "us-east-1"))}), "connection_info")
	if got := s.get(t, pro, v.ID); !reflect.DeepEqual(got, u) {
		t.Fatalf("after a refused change\n got %+v\nwant %+v", got, u)
	}

	// A disabled destination's failing change is saved, failure recorded.
	s.clock.Advance(time.Minute)
	d := s.save(t, pro, v.ID, dest("Renders", retained(bad, "region", "us-east-1"), "disabled", true))
	if d.Enabled || *d.LastTestSucceeded || *d.LastTestError != "the bucket answered: NoSuchBucket" || d.ConnectionInfo["region"] != "us-east-1" {
		t.Fatalf("saved %+v", d)
	}

	// Long errors are cut to 1000 characters; a Describe that says
	// nothing gives the error itself; a test that never ends times out.
	s.tests.failBucket("chatty", errors.New(strings.Repeat("é", 5000)))
	long := s.save(t, pro, "", dest("Renders", with(good, "bucket", "chatty"), "disabled", true))
	if n := utf8.RuneCountInString(*long.LastTestError); n != storedest.MaxTestError || !strings.HasSuffix(*long.LastTestError, "…") {
		t.Fatalf("last_test_error of %d characters", n)
	}
	s.h.Describe = func(error) string { return " " }
	s.tests.failBucket("quiet", errors.New("SignatureDoesNotMatch"))
	if q := s.save(t, pro, "", dest("Renders", with(good, "bucket", "quiet"), "disabled", true)); *q.LastTestError != "SignatureDoesNotMatch" {
		t.Fatalf("last_test_error %q", *q.LastTestError)
	}
	s.h.TestTimeout = 50 * time.Millisecond
	s.tests.failBucket("slow", context.DeadlineExceeded)
	r = s.do(t, apitest.Request{Method: "POST", Path: path(""), Creds: pro, JSON: dest("Renders", with(good, "bucket", "slow"))})
	apitest.WantField(t, r, "connection_info")
	apitest.WantMessage(t, r.Object(t), "deadline exceeded")
}

// TestSecretNeverShown: secrets are sealed at rest and never answered or
// logged — not in answers, validation errors, last_test_error (even when
// the provider's error repeats it) or any log line, at debug level.
func TestSecretNeverShown(t *testing.T) {
	var logs apitest.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(prev) })

	s := start(t)
	const secret = "SECRET-sk-4f1d9c0a7b2e81"
	s.tests.failBucket("leaky", fmt.Errorf("SignatureDoesNotMatch: the request signed with %s was refused", secret))
	conn := with(conns[storage.OtherS3Compatible], "secret_access_key", secret)
	var bodies [][]byte
	call := func(r apitest.Request, status int) *apitest.Response {
		t.Helper()
		resp := s.do(t, r)
		apitest.WantStatus(t, resp, status)
		bodies = append(bodies, resp.Body)
		return resp
	}
	var v view
	call(apitest.Request{Method: "POST", Path: path(""), Creds: pro, JSON: dest("Renders", conn)}, 200).Decode(t, &v)
	call(apitest.Request{Method: "GET", Path: path(v.ID), Creds: pro}, 200)
	call(apitest.Request{Method: "GET", Path: path(""), Creds: pro}, 200)
	call(apitest.Request{Method: "POST", Path: path(v.ID), Creds: pro, JSON: dest("Renamed", retained(conn))}, 200)
	call(apitest.Request{Method: "POST", Path: path(v.ID), Creds: pro, JSON: dest("Renders", with(conn, "bucket", "leaky"))}, 400)
	call(apitest.Request{Method: "POST", Path: path(v.ID), Creds: pro, JSON: dest("Renders", with(conn, "bucket", "leaky"), "disabled", true)}, 200)
	call(apitest.Request{Method: "GET", Path: path(v.ID), Creds: pro}, 200).Decode(t, &v)
	call(apitest.Request{Method: "POST", Path: path(""), Creds: pro, JSON: dest("Renders", with(conn, "secret_access_key", secret+" with a space", "bucket", "X"))}, 400)
	call(apitest.Request{Method: "POST", Path: path(""), Creds: pro, JSON: dest("Renders", with(conn, "retain_secret_access_key", true))}, 400)

	if v.LastTestError == nil || !strings.Contains(*v.LastTestError, "[redacted]") {
		t.Fatalf("last_test_error %v", v.LastTestError)
	}
	for _, b := range bodies {
		if bytes.Contains(b, []byte(secret)) {
			t.Fatalf("an answer holds the secret: %s", b)
		}
		var m any
		json.Unmarshal(b, &m)
		if key := secretKey(m); key != "" {
			t.Fatalf("an answer has a member %q: %s", key, b)
		}
	}
	if l := logs.String(); strings.Contains(l, secret) || !strings.Contains(l, `"msg":"request"`) ||
		!strings.Contains(l, "storage destination connection test failed") {
		t.Fatalf("logs hold the secret, or nothing was logged:\n%s", l)
	}
	it := s.db.Iterate(t.Context(), nil, kv.IterOptions{})
	defer it.Close()
	for it.Next() {
		if bytes.Contains(it.Value(), []byte(secret)) {
			t.Fatalf("%s holds the secret in clear", it.Key())
		}
	}
	if c := s.connection(t, pro, v.ID); c.SecretAccessKey != secret {
		t.Fatalf("the secret did not survive: %q", c.SecretAccessKey)
	}
}

// secretKey returns a member name mentioning a secret anywhere in v.
func secretKey(v any) string {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if strings.Contains(k, "secret") {
				return k
			}
			if k := secretKey(x); k != "" {
				return k
			}
		}
	case []any:
		for _, x := range v {
			if k := secretKey(x); k != "" {
				return k
			}
		}
	}
	return ""
}

var externalShape = regexp.MustCompile(`^pictor-[a-z2-7]{26}$`)

// TestExternalIDRoute: one external id per organization, whatever the
// number of first callers; aws_s3 tests assume the role with it.
func TestExternalIDRoute(t *testing.T) {
	s := start(t)
	const n = 16
	got := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r, err := apitest.Send(s.base, apitest.Request{Method: "GET", Path: path("aws-external-id"), Creds: pro})
			if err != nil || r.Status != 200 {
				t.Errorf("GET aws-external-id: %v %v", r, err)
				return
			}
			var body map[string]string
			json.Unmarshal(r.Body, &body)
			if len(body) != 1 {
				t.Errorf("answer %s", r.Body)
			}
			got[i] = body["external_id"]
		})
	}
	wg.Wait()
	for _, id := range got {
		if id != got[0] || !externalShape.MatchString(id) {
			t.Fatalf("external ids %q", got)
		}
	}
	read := func(creds *apitest.Creds) string {
		r := s.do(t, apitest.Request{Method: "GET", Path: path("aws-external-id"), Creds: creds})
		apitest.WantStatus(t, r, 200)
		if p := r.Header.Get("RateLimit-Policy"); p != `"storage-destination:read";q=100;w=60` {
			t.Fatalf("RateLimit-Policy %q", p)
		}
		var body map[string]string
		r.Decode(t, &body)
		return body["external_id"]
	}
	if read(readOnly) != got[0] {
		t.Fatal("another key of the organization got another external id")
	}
	if theirs := read(other); theirs == got[0] || !externalShape.MatchString(theirs) {
		t.Fatalf("another organization's external id %q", theirs)
	}
	s.save(t, pro, "", dest("AWS", conns[storage.AWSS3]))
	if tested := s.tests.take(); len(tested) != 1 || tested[0].ExternalID != got[0] || tested[0].RoleARN != role {
		t.Fatalf("tested %+v", tested)
	}
}

// TestPlanGating: below the pro plan every route answers 403 naming the
// requirement, even to a key holding every permission; nothing is read,
// tested or stored. After a downgrade the destinations stay, out of reach.
func TestPlanGating(t *testing.T) {
	s := start(t)
	mine := s.save(t, pro, "", dest("Renders", conns[storage.Wasabi]))
	s.tests.take()
	calls := []struct{ method, path string }{
		{"POST", path("")}, {"GET", path("")}, {"GET", path("aws-external-id")},
		{"GET", path(mine.ID)}, {"POST", path(mine.ID)}, {"DELETE", path(mine.ID)},
	}
	for _, c := range []*apitest.Creds{free, downgraded} {
		for _, rt := range calls {
			t.Run(c.APIID+" "+rt.method+" "+rt.path, func(t *testing.T) {
				r := s.do(t, apitest.Request{Method: rt.method, Path: rt.path, Creds: c, JSON: dest("Renders", conns[storage.Wasabi])})
				plan := c.APIID[strings.LastIndexByte(c.APIID, '-')+1:]
				apitest.WantMessage(t, apitest.WantError(t, r, http.StatusForbidden), "pro plan or higher", "10,000 images a month", plan+" plan")
				if p := r.Header.Get("RateLimit-Policy"); p != "" {
					t.Fatalf("a plan refusal was counted: RateLimit-Policy %q", p)
				}
			})
		}
	}
	// The handlers refuse by themselves too, should a route lack Check.
	bare := routes(s.h)
	for i := range bare {
		bare[i].Check = nil
	}
	srv := httptest.NewServer(api.New(api.Config{Authenticator: orgs{}, Limiter: ratelimit.NewMemory(s.limits.Now)}, bare))
	defer srv.Close()
	for _, rt := range calls {
		r := apitest.Do(t, srv.URL, apitest.Request{Method: rt.method, Path: rt.path, Creds: downgraded, JSON: dest("Renders", conns[storage.Wasabi])})
		apitest.WantMessage(t, apitest.WantError(t, r, http.StatusForbidden), "pro plan or higher")
	}
	if got := s.tests.take(); len(got) != 0 {
		t.Fatalf("tests ran: %+v", got)
	}
	if list, _, _ := s.h.Store.List(t.Context(), orgID(pro), "", 10); len(list) != 1 {
		t.Fatalf("the organization holds %d destinations", len(list))
	}
	if got := s.get(t, pro, mine.ID); !reflect.DeepEqual(got, mine) {
		t.Fatalf("back on pro: %+v", got)
	}
	apitest.WantStatus(t, s.do(t, apitest.Request{Method: "GET", Path: path(""), Creds: scale}), 200)
}

// TestIsolation: another organization's destination is not found, exactly
// like an unknown one, never listed, and untouched: an update naming it
// neither retains its secret nor tests its bucket. A deletion's answer is
// the kit's (resource.TestRoutes).
func TestIsolation(t *testing.T) {
	s := start(t)
	mine := s.save(t, pro, "", dest("Mine", conns[storage.Wasabi]))
	theirs := s.save(t, other, "", dest("Theirs", conns[storage.Wasabi]))
	s.tests.take()
	unknown := "0190a0b0-c0d0-7e0f-8a0b-0c0d0e0f0a0b"
	for _, m := range []string{"GET", "POST"} {
		t.Run(m, func(t *testing.T) {
			body := dest("Hijacked", retained(conns[storage.Wasabi], "bucket", "mine-now"))
			foreign := s.do(t, apitest.Request{Method: m, Path: path(theirs.ID), Creds: pro, JSON: body})
			missing := s.do(t, apitest.Request{Method: m, Path: path(unknown), Creds: pro, JSON: body})
			apitest.WantError(t, foreign, 404)
			if !bytes.Equal(foreign.Body, missing.Body) {
				t.Fatalf("foreign %s, unknown %s", foreign.Body, missing.Body)
			}
		})
	}
	if got := s.get(t, other, theirs.ID); !reflect.DeepEqual(got, theirs) {
		t.Fatalf("theirs after my attempts: %+v", got)
	}
	if got := s.tests.take(); len(got) != 0 {
		t.Fatalf("tests ran: %+v", got)
	}
	var p page
	s.do(t, apitest.Request{Method: "GET", Path: path(""), Creds: pro}).Decode(t, &p)
	if len(p.Data) != 1 || p.Data[0].ID != mine.ID {
		t.Fatalf("my list %+v", p.Data)
	}
	if _, err := s.h.Store.Get(t.Context(), orgID(pro), theirs.ID); !errors.Is(err, storedest.ErrNotFound) {
		t.Fatalf("Store.Get of another organization's destination: %v", err)
	}
}

// TestDelete: 204 in the write group, then "Storage destination not
// found"; the others stay; nothing is tested (objects in the bucket are
// not touched). That every route then answers 404 is the kit's
// (resource.TestRoutes).
func TestDelete(t *testing.T) {
	s := start(t)
	a := s.save(t, pro, "", dest("Dest A", conns[storage.Wasabi]))
	b := s.save(t, pro, "", dest("Dest B", conns[storage.GoogleCloudStorage], "disabled", true))
	s.tests.take()
	r := s.do(t, apitest.Request{Method: "DELETE", Path: path(a.ID), Creds: pro})
	apitest.WantStatus(t, r, http.StatusNoContent)
	if len(r.Body) != 0 || r.Header.Get("RateLimit-Policy") != `"storage-destination:write";q=20;w=60` {
		t.Fatalf("delete answered %q (%s)", r.Body, r.Header.Get("RateLimit-Policy"))
	}
	apitest.WantMessage(t, apitest.WantError(t, s.do(t, apitest.Request{Method: "GET", Path: path(a.ID), Creds: pro}), 404), "Storage destination not found")
	var p page
	s.do(t, apitest.Request{Method: "GET", Path: path(""), Creds: pro}).Decode(t, &p)
	if len(p.Data) != 1 || p.Data[0].ID != b.ID {
		t.Fatalf("list after deletion %+v", p.Data)
	}
	if got := s.tests.take(); len(got) != 0 {
		t.Fatalf("tests ran: %+v", got)
	}
	if _, err := s.h.Store.Get(t.Context(), orgID(pro), a.ID); !errors.Is(err, storedest.ErrNotFound) {
		t.Fatalf("Store.Get after deletion: %v", err)
	}
	apitest.WantStatus(t, s.do(t, apitest.Request{Method: "DELETE", Path: path(b.ID), Creds: readOnly}), http.StatusForbidden)
}

// TestList: newest first, disabled included, no secret shown, paged with
// the destinations' cursors, which only this organization's list accepts.
// The paging mechanics (count bounds, forged cursors, exact and empty
// pages) are the kit's (resource.TestServeList, resource.TestRoutesList).
func TestList(t *testing.T) {
	s := start(t)
	var ids []string
	for i := range 12 {
		v := s.save(t, pro, "", dest(fmt.Sprintf("Renders %d", i), conns[storage.Wasabi], "disabled", i%3 == 0))
		ids = append(ids, v.ID)
	}
	s.save(t, other, "", dest("Theirs", conns[storage.Wasabi]))
	slices.Reverse(ids)

	list := func(creds *apitest.Creds, query string) page {
		t.Helper()
		r := s.do(t, apitest.Request{Method: "GET", Path: path("") + query, Creds: creds})
		apitest.WantStatus(t, r, 200)
		if strings.Contains(string(r.Body), "secret") {
			t.Fatalf("the list mentions secrets: %s", r.Body)
		}
		var p page
		r.Decode(t, &p)
		return p
	}
	idsOf := func(p page) []string {
		var out []string
		for _, v := range p.Data {
			out = append(out, v.ID)
		}
		return out
	}
	first := list(pro, "")
	if !slices.Equal(idsOf(first), ids[:10]) || first.Pagination.NextPageStart == nil {
		t.Fatalf("default page %q, want %q", idsOf(first), ids[:10])
	}
	if first.Data[0].Enabled == first.Data[2].Enabled || first.Data[0].Name != "Renders 11" {
		t.Fatalf("first page %+v", first.Data[:3])
	}
	var walked, cursors []string
	query := "?count=5"
	for range 10 {
		p := list(pro, query)
		walked = append(walked, idsOf(p)...)
		if p.Pagination.NextPageStart == nil {
			break
		}
		cursors = append(cursors, *p.Pagination.NextPageStart)
		query = "?count=5&page_start=" + url.QueryEscape(*p.Pagination.NextPageStart)
	}
	if !slices.Equal(walked, ids) || len(cursors) != 2 {
		t.Fatalf("pages of 5 walked %q with %d cursors, want %q", walked, len(cursors), ids)
	}
	apitest.WantField(t, s.do(t, apitest.Request{Method: "GET", Path: path("") + "?page_start=" + url.QueryEscape(cursors[0]), Creds: other}), "page_start")
}

// TestRateLimit: writes share storage-destination:write (20 a minute);
// reads have their own group.
func TestRateLimit(t *testing.T) {
	s := start(t)
	s.limits.Advance(ratelimit.Window)
	s.burst = true
	v := s.save(t, pro, "", dest("Renders", conns[storage.Wasabi]))
	for range ratelimit.WriteQuota - 1 {
		s.save(t, pro, v.ID, dest("Renders", retained(conns[storage.Wasabi])))
	}
	r := s.do(t, apitest.Request{Method: "DELETE", Path: path(v.ID), Creds: pro})
	apitest.WantMessage(t, apitest.WantError(t, r, http.StatusTooManyRequests), "storage-destination:write")
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
	apitest.WantStatus(t, s.do(t, apitest.Request{Method: "GET", Path: path(v.ID), Creds: pro}), 200)
}

// TestUnopenableSecret: a stored secret that no longer opens (another
// master key) cannot be kept, and is replaced by a new one.
func TestUnopenableSecret(t *testing.T) {
	s := start(t)
	v := s.save(t, pro, "", dest("Renders", conns[storage.Wasabi]))
	s.tests.take()
	box, err := seal.New(bytes.Repeat([]byte{2}, 32))
	if err != nil {
		t.Fatal(err)
	}
	s.h.Store = storedest.NewStore(s.db, box, s.clock.Now)
	apitest.WantField(t, s.do(t, apitest.Request{Method: "POST", Path: path(v.ID), Creds: pro, JSON: dest("Renders", retained(conns[storage.Wasabi]))}),
		"connection_info.retain_secret_access_key")
	s.save(t, pro, v.ID, dest("Renders", with(conns[storage.Wasabi], "secret_access_key", "wasabi-secret-new")))
	if got := s.tests.take(); len(got) != 1 || got[0].SecretAccessKey != "wasabi-secret-new" {
		t.Fatalf("tests %+v", got)
	}
	if c := s.connection(t, pro, v.ID); c.SecretAccessKey != "wasabi-secret-new" {
		t.Fatalf("stored secret %q", c.SecretAccessKey)
	}
}
