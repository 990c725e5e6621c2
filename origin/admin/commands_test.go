package admin_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/admin"
	"github.com/pictorhq/pictor/origin/apikey"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/perm"
	"github.com/pictorhq/pictor/origin/plan"
	"github.com/pictorhq/pictor/origin/usage"
)

// TestListOrgs: every organization in creation order, with its keys
// counted and the credits of its billing period, and no secret.
func TestListOrgs(t *testing.T) {
	s := start(t)
	c := s.dial(t)
	if list, err := c.ListOrgs(t.Context()); err != nil || list.Data == nil || len(list.Data) != 0 {
		t.Fatalf("empty store: %+v, %v (want an empty array)", list, err)
	}
	acme, err := c.CreateOrg(t.Context(), "Acme", "pro")
	if err != nil {
		t.Fatal(err)
	}
	globex, err := c.CreateOrg(t.Context(), "Globex", "free")
	if err != nil {
		t.Fatal(err)
	}
	// Acme: a second key, disabled; 7 credits used; suspended.
	k, _, err := s.keys.Create(acme.OrgID, apikey.Request{Name: "ci", Grant: perm.Grant{Permissions: []perm.Permission{}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.keys.Disable(context.Background(), acme.OrgID, k.ID, nil); err != nil {
		t.Fatal(err)
	}
	o, _ := s.orgs.Get(t.Context(), acme.OrgID)
	err = s.store.Update(context.Background(), usage.Lock(o.ID), func(txn kv.Txn) error {
		_, err := usage.Charge(t.Context(), txn, o, time.Now(), 7)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetSuspended(t.Context(), acme.OrgID, true); err != nil {
		t.Fatal(err)
	}

	list, err := c.ListOrgs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Data) != 2 || list.Data[0].ID != acme.OrgID || list.Data[1].ID != globex.OrgID {
		t.Fatalf("list %+v, want Acme then Globex", list.Data)
	}
	a, g := list.Data[0], list.Data[1]
	pro, _ := plan.Lookup("pro")
	free, _ := plan.Lookup("free")
	if a.Name != "Acme" || a.Plan != "pro" || !a.Suspended || a.Keys != 2 || a.EnabledKeys != 1 || a.CreditsUsed != 7 || a.CreditsLimit != pro.Credits {
		t.Fatalf("Acme listed as %+v", a)
	}
	if g.Name != "Globex" || g.Plan != "free" || g.Suspended || g.Keys != 1 || g.EnabledKeys != 1 || g.CreditsUsed != 0 || g.CreditsLimit != free.Credits {
		t.Fatalf("Globex listed as %+v", g)
	}
	for _, v := range list.Data {
		created, err1 := time.Parse(time.RFC3339, v.CreatedAt)
		start, err2 := time.Parse(time.RFC3339, v.PeriodStart)
		end, err3 := time.Parse(time.RFC3339, v.PeriodEnd)
		if err := errors.Join(err1, err2, err3); err != nil || time.Since(created) > time.Hour || !start.Equal(created) || !end.After(start) {
			t.Fatalf("times of %s: created %s, period %s to %s (%v)", v.Name, v.CreatedAt, v.PeriodStart, v.PeriodEnd, err)
		}
	}

	// The raw answer holds no secret, sealed or not.
	ep := s.endpoint(t)
	status, body := post(t, ep, "GET", "/admin/orgs", "Bearer "+ep.Token, "")
	raw := fmt.Sprint(body)
	if status != 200 || strings.Contains(raw, acme.Key.APIKey) || strings.Contains(raw, globex.Key.APIKey) || strings.Contains(raw, "secret") {
		t.Fatalf("GET /admin/orgs: %d %s", status, raw)
	}
}

// TestSetPlan: the plan changes at once; an unknown plan or organization
// is the operator's error, and changes nothing.
func TestSetPlan(t *testing.T) {
	s := start(t)
	c := s.dial(t)
	created, err := c.CreateOrg(t.Context(), "Acme", "free")
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.SetPlan(t.Context(), created.OrgID, "scale")
	if err != nil {
		t.Fatal(err)
	}
	scale, _ := plan.Lookup("scale")
	if v.ID != created.OrgID || v.Plan != "scale" || v.CreditsLimit != scale.Credits || v.Keys != 1 {
		t.Fatalf("set-plan answered %+v", v)
	}
	if o, err := s.orgs.Get(t.Context(), created.OrgID); err != nil || o.Plan != "scale" || !o.UpdatedAt.After(o.CreatedAt) && !o.UpdatedAt.Equal(o.CreatedAt) {
		t.Fatalf("stored %+v (%v)", o, err)
	}
	p, err := s.keys.Authenticate(context.Background(), created.Key.APIID, created.Key.APIKey)
	if err != nil || p.Org.Plan != "scale" {
		t.Fatalf("a request after set-plan sees %+v (%v)", p, err)
	}

	tests := []struct {
		name, id, plan, want string
	}{
		{"unknown plan", created.OrgID, "platinum", "unknown plan"},
		{"empty plan", created.OrgID, "", "unknown plan"},
		{"unknown organization", "no-such-org", "pro", "organization not found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.SetPlan(t.Context(), tc.id, tc.plan)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("SetPlan(%q, %q) = %v, want an error mentioning %q", tc.id, tc.plan, err, tc.want)
			}
			if o, _ := s.orgs.Get(t.Context(), created.OrgID); o.Plan != "scale" {
				t.Fatalf("a refused set-plan changed the plan to %q", o.Plan)
			}
		})
	}
	ep := s.endpoint(t)
	if status, body := post(t, ep, "POST", "/admin/orgs/"+created.OrgID+"/plan", "Bearer "+ep.Token, `{"plan":`); status != 400 || body["message"] != "malformed request" {
		t.Fatalf("malformed set-plan: %d %v", status, body)
	}
}

// TestSetPlanKeepsSuspension: a plan change and a suspension of the same
// organization at the same time both hold: neither writes back a record
// read before the other.
func TestSetPlanKeepsSuspension(t *testing.T) {
	s := start(t)
	created, err := s.dial(t).CreateOrg(t.Context(), "Acme", "free")
	if err != nil {
		t.Fatal(err)
	}
	svc := &admin.Service{Orgs: s.orgs, Keys: s.keys}
	for round := range 20 {
		if _, err := s.orgs.SetSuspended(t.Context(), created.OrgID, false); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 40)
		for i := range 20 {
			wg.Go(func() {
				_, err := svc.SetPlan(t.Context(), created.OrgID, plan.Names()[i%len(plan.Names())])
				errs <- err
			})
		}
		wg.Go(func() {
			_, err := s.orgs.SetSuspended(t.Context(), created.OrgID, true)
			errs <- err
		})
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if o, _ := s.orgs.Get(t.Context(), created.OrgID); !o.Suspended {
			t.Fatalf("round %d: a concurrent plan change undid the suspension", round)
		}
	}
}

// TestCreateKey: an owner key (every permission, future ones too) that
// authenticates at once; the operator's mistakes are answered as such.
func TestCreateKey(t *testing.T) {
	s := start(t)
	c := s.dial(t)
	created, err := c.CreateOrg(t.Context(), "Acme", "pro")
	if err != nil {
		t.Fatal(err)
	}
	k, err := c.CreateKey(t.Context(), created.OrgID, "")
	if err != nil {
		t.Fatal(err)
	}
	if k.OrgID != created.OrgID || k.APIID == "" || k.APIKey == "" || k.APIKey == created.Key.APIKey || k.Name != admin.OwnerKeyName ||
		!k.AllFuture || !k.Enabled || k.Suspended {
		t.Fatalf("created key %+v", k)
	}
	p, err := s.keys.Authenticate(context.Background(), k.APIID, k.APIKey)
	if err != nil || p.Org.ID != created.OrgID || !p.Grant.AllFuture {
		t.Fatalf("the new key authenticates as %+v (%v)", p, err)
	}
	named, err := c.CreateKey(t.Context(), created.OrgID, "  break-glass  ")
	if err != nil || named.Name != "break-glass" {
		t.Fatalf("named key %+v (%v)", named, err)
	}

	if _, err := c.SetSuspended(t.Context(), created.OrgID, true); err != nil {
		t.Fatal(err)
	}
	if k, err := c.CreateKey(t.Context(), created.OrgID, ""); err != nil || !k.Suspended {
		t.Fatalf("a key of a suspended organization: %+v (%v), want it flagged", k, err)
	}

	tests := []struct {
		name, org, keyName, want string
	}{
		{"unknown organization", "no-such-org", "", "organization not found"},
		{"name too long", created.OrgID, strings.Repeat("n", apikey.MaxName+1), "at most"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.CreateKey(t.Context(), tc.org, tc.keyName)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CreateKey(%q) = %v, want an error mentioning %q", tc.org, err, tc.want)
			}
		})
	}

	// Past the limit of keys the operator is told so, not "internal error".
	for {
		_, _, err := s.keys.Create(created.OrgID, apikey.Request{Grant: perm.Grant{Permissions: []perm.Permission{}}}, nil)
		if errors.Is(err, apikey.ErrLimit) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.CreateKey(t.Context(), created.OrgID, ""); err == nil || !strings.Contains(err.Error(), "at most 100 API keys") {
		t.Fatalf("CreateKey past the limit = %v", err)
	}
}

// TestAuditLog: each command that changes something is logged with what
// it changed, never with a secret.
func TestAuditLog(t *testing.T) {
	var buf apitest.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })

	s := start(t)
	c := s.dial(t)
	created, err := c.CreateOrg(t.Context(), "Acme", "pro")
	if err != nil {
		t.Fatal(err)
	}
	k, err := c.CreateKey(t.Context(), created.OrgID, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetPlan(t.Context(), created.OrgID, "basic"); err != nil {
		t.Fatal(err)
	}
	logs := buf.String()
	for _, want := range []string{`"command":"org.create"`, `"command":"key.create"`, `"api_id":"` + k.APIID + `"`, `"command":"org.set_plan"`, `"plan":"basic"`} {
		if !strings.Contains(logs, want) {
			t.Fatalf("audit log lacks %s:\n%s", want, logs)
		}
	}
	for _, secret := range []string{k.APIKey, created.Key.APIKey, s.endpoint(t).Token} {
		if strings.Contains(logs, secret) {
			t.Fatalf("a secret is in the log:\n%s", logs)
		}
	}
}

// TestBackupEndpoint: the archive streams to the client; a refusal before
// the first byte is the server's message, a failure after it cuts the
// stream (the client's archive then fails Verify).
func TestBackupEndpoint(t *testing.T) {
	archive := func(w io.Writer) (*admin.Manifest, error) {
		aw := admin.NewArchiveWriter(w)
		if err := aw.Add("master.key", strings.NewReader("k\n"), 2); err != nil {
			return nil, err
		}
		return aw.Close()
	}
	tests := []struct {
		name    string
		backup  func(ctx context.Context, w io.Writer) (*admin.Manifest, error)
		wantErr string // "" for an archive that verifies
		cut     bool   // the client receives a partial archive
	}{
		{"archive", func(_ context.Context, w io.Writer) (*admin.Manifest, error) { return archive(w) }, "", false},
		{"no backups", nil, "covers the embedded store only", false},
		{"refused before writing", func(context.Context, io.Writer) (*admin.Manifest, error) {
			return nil, fmt.Errorf("%w: with --store", admin.ErrBackupUnsupported)
		}, "with --store", false},
		{"fault before writing", func(context.Context, io.Writer) (*admin.Manifest, error) {
			return nil, errors.New("disk on fire")
		}, "internal error", false},
		{"fault after writing", func(_ context.Context, w io.Writer) (*admin.Manifest, error) {
			aw := admin.NewArchiveWriter(w)
			if err := aw.Add("kv/000001.sst", bytes.NewReader(make([]byte, 1<<20)), 1<<20); err != nil {
				return nil, err
			}
			return nil, errors.New("disk on fire")
		}, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startWith(t, func(svc *admin.Service) { svc.WriteBackup = tc.backup })
			var got bytes.Buffer
			err := s.dial(t).Backup(context.Background(), &got)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "disk on fire") {
					t.Fatalf("Backup = %v, want an error mentioning %q and no cause", err, tc.wantErr)
				}
				if got.Len() != 0 {
					t.Fatalf("a refusal wrote %d bytes", got.Len())
				}
			case tc.cut:
				if _, verr := admin.Verify(&got); err == nil && verr == nil {
					t.Fatal("a backup that failed halfway verified")
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
				m, err := admin.Verify(&got)
				if err != nil || len(m.Files) != 1 || m.Files[0].Name != "master.key" {
					t.Fatalf("received %+v (%v)", m, err)
				}
			}
		})
	}
}

// TestStopEndsABackup: a backup still being sent when Stop's grace ends
// has its connection closed, which ends its context: the server's work
// stops and the client fails.
func TestStopEndsABackup(t *testing.T) {
	writing := make(chan struct{})
	ended := make(chan error, 1)
	s := startWith(t, func(svc *admin.Service) {
		svc.WriteBackup = func(ctx context.Context, w io.Writer) (*admin.Manifest, error) {
			w.Write(make([]byte, 64<<10)) // past the response's buffer: sent
			close(writing)
			<-ctx.Done()
			ended <- ctx.Err()
			return nil, ctx.Err()
		}
	})
	c := s.dial(t)
	got := make(chan error, 1)
	go func() { got <- c.Backup(context.Background(), io.Discard) }()
	<-writing
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no grace
	if err := s.srv.Stop(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stop = %v, want the grace's end", err)
	}
	for _, ch := range []chan error{ended, got} {
		select {
		case err := <-ch:
			if err == nil {
				t.Fatal("the backup ended without an error")
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the backup still runs after Stop")
		}
	}
}
