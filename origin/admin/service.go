package admin

import (
	"context"
	"errors"
	"fmt"

	"github.com/pictorhq/pictor/origin/apikey"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/perm"
)

// Service performs the operator commands on the stores.
type Service struct {
	Orgs *org.Store
	Keys *apikey.Store
	// OnSuspend runs after an organization is suspended, before the command
	// answers: the edges drop its images there.
	OnSuspend func(ctx context.Context, orgID string) error
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
func (s *Service) CreateOrg(name, planName string) (*Created, error) {
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
func (s *Service) SetSuspended(orgID string, suspended bool) (*OrgState, error) {
	o, err := s.Orgs.SetSuspended(orgID, suspended)
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

// IsUserError reports whether err is the operator's mistake rather than a fault.
func IsUserError(err error) bool {
	return errors.Is(err, org.ErrNotFound) || errors.Is(err, org.ErrUnknownPlan) || errors.Is(err, org.ErrInvalidName)
}
