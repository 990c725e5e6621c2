package origin

import (
	"context"

	"github.com/pictorhq/pictor/origin/apikey"
	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/images"
	"github.com/pictorhq/pictor/origin/org"
)

// signers finds the keys that sign URLs: enabled keys of active
// organizations, with their secrets.
type signers struct {
	keys *apikey.Store
	orgs *org.Store
}

var _ images.SignerStore = signers{}

func (s signers) Signer(ctx context.Context, apiID string) (*images.Signer, error) {
	k, err := s.keys.ByAPIID(ctx, apiID)
	if err != nil {
		return nil, err
	}
	if k.Disabled {
		return nil, auth.ErrDisabled
	}
	o, err := s.orgs.Get(ctx, k.OrgID)
	if err != nil {
		return nil, err
	}
	if o.Suspended {
		return nil, auth.ErrSuspended
	}
	secret, err := s.keys.Secret(k)
	if err != nil {
		return nil, err
	}
	return &images.Signer{Org: o, APIID: k.APIID, Secret: secret, Grant: k.Grant()}, nil
}

// Signers returns every enabled key of an active organization.
func (s signers) Signers(ctx context.Context, orgID string) ([]*images.Signer, error) {
	o, err := s.orgs.Get(ctx, orgID)
	if err != nil {
		return nil, err
	}
	if o.Suspended {
		return nil, auth.ErrSuspended
	}
	keys, _, err := s.keys.List(ctx, orgID, "", apikey.MaxPerOrg, apikey.Filter{})
	if err != nil {
		return nil, err
	}
	out := make([]*images.Signer, 0, len(keys))
	for _, k := range keys {
		secret, err := s.keys.Secret(k)
		if err != nil {
			return nil, err
		}
		out = append(out, &images.Signer{Org: o, APIID: k.APIID, Secret: secret, Grant: k.Grant()})
	}
	return out, nil
}
