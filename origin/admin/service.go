package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/apikey"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/perm"
	"github.com/pictorhq/pictor/origin/usage"
)

// Service performs the operator commands on the stores.
type Service struct {
	Orgs *org.Store
	Keys *apikey.Store
	// OnSuspend runs after an organization is suspended, before the command
	// answers: the edges drop its images there.
	OnSuspend func(ctx context.Context, orgID string) error
	// Store, when set, gives ListOrgs the credits each organization used
	// in its billing period.
	Store kv.Reader
	// Now is the clock of the billing periods; nil is the wall clock.
	Now func() time.Time
	// WriteBackup, when set, writes an archive of the data directory to w
	// (see ArchiveWriter). It returns an error before writing anything
	// when the data cannot be backed up this way (ErrBackupUnsupported).
	WriteBackup func(ctx context.Context, w io.Writer) (*Manifest, error)
	// ResealPass, when set, seals every stored secret again under the
	// current master key (Reseal).
	ResealPass func(ctx context.Context) (ResealReport, error)
}

// Created is what `pictor admin org create` prints.
type Created struct {
	OrgID string      `json:"org_id"`
	Name  string      `json:"name"`
	Plan  string      `json:"plan"`
	Key   apikey.View `json:"key"`
}

// CreateOrg creates an organization and its first key, which holds all
// current and future permissions.
func (s *Service) CreateOrg(ctx context.Context, name, planName string) (*Created, error) {
	o, err := s.Orgs.Create(name, planName)
	if err != nil {
		return nil, err
	}
	k, secret, err := s.Keys.Create(o.ID, apikey.Request{
		Name:  "Owner key",
		Grant: perm.Grant{Permissions: []perm.Permission{}, AllFuture: true},
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("create first key of organization %s: %w", o.ID, err)
	}
	return &Created{OrgID: o.ID, Name: o.Name, Plan: o.Plan, Key: apikey.NewView(k, secret)}, nil
}

// OrgState is what suspend and resume print.
type OrgState struct {
	OrgID     string `json:"org_id"`
	Name      string `json:"name"`
	Plan      string `json:"plan"`
	Suspended bool   `json:"suspended"`
}

// SetSuspended suspends or resumes an organization.
func (s *Service) SetSuspended(ctx context.Context, orgID string, suspended bool) (*OrgState, error) {
	o, err := s.Orgs.SetSuspended(ctx, orgID, suspended)
	if err != nil {
		return nil, err
	}
	if suspended && s.OnSuspend != nil {
		if err := s.OnSuspend(context.Background(), o.ID); err != nil {
			return nil, fmt.Errorf("purge the images of organization %s: %w", o.ID, err)
		}
	}
	return &OrgState{OrgID: o.ID, Name: o.Name, Plan: o.Plan, Suspended: o.Suspended}, nil
}

// Org is an organization as `pictor admin org list` and `set-plan` print
// it: its record, its keys and the credits of its current billing period.
// It holds no secret.
type Org struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Plan        string `json:"plan"`
	Suspended   bool   `json:"suspended"`
	CreatedAt   string `json:"created_at"`
	UpdatedAt   string `json:"updated_at"`
	Keys        int    `json:"keys"`         // every key, disabled ones included
	EnabledKeys int    `json:"enabled_keys"` // keys that authenticate (while the organization is active)
	// CreditsUsed and CreditsLimit are the image credits of the current
	// billing period, which runs from PeriodStart to PeriodEnd. Without a
	// store (Service.Store) they are 0.
	CreditsUsed  int64  `json:"credits_used"`
	CreditsLimit int64  `json:"credits_limit"`
	PeriodStart  string `json:"period_start"`
	PeriodEnd    string `json:"period_end"`
}

// OrgList is what `pictor admin org list` prints: every organization in
// creation order.
type OrgList struct {
	Data []*Org `json:"data"`
}

// ListOrgs returns every organization.
func (s *Service) ListOrgs(ctx context.Context) (*OrgList, error) {
	orgs, err := s.Orgs.List(ctx)
	if err != nil {
		return nil, err
	}
	out := &OrgList{Data: make([]*Org, 0, len(orgs))}
	for _, o := range orgs {
		v, err := s.view(ctx, o)
		if err != nil {
			return nil, err
		}
		out.Data = append(out.Data, v)
	}
	return out, nil
}

// SetPlan moves an organization to another plan; its limits change at
// once (every request reads the organization's record).
func (s *Service) SetPlan(ctx context.Context, orgID, planName string) (*Org, error) {
	o, err := s.Orgs.SetPlan(ctx, orgID, planName)
	if err != nil {
		return nil, err
	}
	return s.view(ctx, o)
}

func (s *Service) view(ctx context.Context, o *org.Org) (*Org, error) {
	keys, _, err := s.Keys.List(ctx, o.ID, "", apikey.MaxPerOrg, apikey.Filter{IncludeDisabled: true})
	if err != nil {
		return nil, fmt.Errorf("keys of organization %s: %w", o.ID, err)
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	t := now()
	period := usage.PeriodAt(o, t)
	v := &Org{ID: o.ID, Name: o.Name, Plan: o.Plan, Suspended: o.Suspended,
		CreatedAt: o.CreatedAt.UTC().Format(apikey.TimeFormat), UpdatedAt: o.UpdatedAt.UTC().Format(apikey.TimeFormat),
		Keys: len(keys), CreditsLimit: o.PlanInfo().Credits,
		PeriodStart: period.Start.UTC().Format(apikey.TimeFormat), PeriodEnd: period.End.UTC().Format(apikey.TimeFormat)}
	for _, k := range keys {
		if !k.Disabled {
			v.EnabledKeys++
		}
	}
	if s.Store != nil {
		if v.CreditsUsed, err = usage.Used(ctx, s.Store, o, t); err != nil {
			return nil, fmt.Errorf("usage of organization %s: %w", o.ID, err)
		}
	}
	return v, nil
}

// OwnerKeyName is the name of the keys `pictor admin key create` makes
// when given none.
const OwnerKeyName = "Owner key"

// KeyCreated is what `pictor admin key create` prints, once: the key with
// its secret.
type KeyCreated struct {
	OrgID string `json:"org_id"`
	apikey.View
	// Suspended: the organization is suspended, and the key authenticates
	// only once it is resumed.
	Suspended bool `json:"organization_suspended"`
}

// CreateKey adds a key holding every current and future permission to an
// organization, as its first key does: the way back in for an
// organization whose keys were lost.
func (s *Service) CreateKey(ctx context.Context, orgID, name string) (*KeyCreated, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		name = OwnerKeyName
	}
	if n := len([]rune(name)); n > apikey.MaxName {
		return nil, userError{fmt.Errorf("key name: must be at most %d characters (got %d)", apikey.MaxName, n)}
	}
	o, err := s.Orgs.Get(ctx, orgID)
	if err != nil {
		return nil, err
	}
	k, secret, err := s.Keys.Create(o.ID, apikey.Request{
		Name:  name,
		Grant: perm.Grant{Permissions: []perm.Permission{}, AllFuture: true},
	}, nil)
	if errors.Is(err, apikey.ErrLimit) {
		return nil, userError{fmt.Errorf("organization %s: %w (delete one through the API: disabled keys count)", o.ID, err)}
	}
	if err != nil {
		return nil, fmt.Errorf("create a key of organization %s: %w", o.ID, err)
	}
	return &KeyCreated{OrgID: o.ID, View: apikey.NewView(k, secret), Suspended: o.Suspended}, nil
}

// Backup writes an archive of the data directory to w; the caller
// verifies what it wrote (Verify).
func (s *Service) Backup(ctx context.Context, w io.Writer) error {
	if s.WriteBackup == nil {
		return ErrBackupUnsupported
	}
	_, err := s.WriteBackup(ctx, w)
	return err
}

// userError marks an operator's mistake (IsUserError).
type userError struct{ error }

func (e userError) Unwrap() error { return e.error }

// IsUserError reports whether err is the operator's mistake rather than a fault.
func IsUserError(err error) bool {
	var ue userError
	return errors.Is(err, org.ErrNotFound) || errors.Is(err, org.ErrUnknownPlan) || errors.Is(err, org.ErrInvalidName) ||
		errors.Is(err, ErrBackupUnsupported) || errors.As(err, &ue)
}
