package admin

import (
	"context"
	"errors"

	"github.com/pictorhq/pictor/origin/seal"
)

// ResealReport is what a pass sealing every stored secret again under the
// current master key did (`pictor admin reseal`): per kind of sealed
// value, how many records hold one, how many it sealed again and how many
// no key opened.
type ResealReport struct {
	// CurrentKey is the key id of the master key values are now sealed
	// under (seal.Box.KeyID).
	CurrentKey          string           `json:"current_key"`
	APIKeys             seal.ResealCount `json:"api_keys"`
	Proxies             seal.ResealCount `json:"proxies"`
	StorageDestinations seal.ResealCount `json:"storage_destinations"`
}

// Total is the counts of every kind together.
func (r ResealReport) Total() seal.ResealCount {
	var t seal.ResealCount
	t.Add(r.APIKeys)
	t.Add(r.Proxies)
	t.Add(r.StorageDestinations)
	return t
}

// Done reports whether the pass left every value it read sealed under the
// current master key: none failed to open. Once a pass that ran after
// every origin sealed under the current key is Done, the previous master
// keys can be dropped.
func (r ResealReport) Done() bool { return r.Total().Failed == 0 }

// errNoReseal: the service was built without a reseal pass.
var errNoReseal = errors.New("this server cannot reseal")

// Reseal seals every stored secret again under the current master key.
func (s *Service) Reseal(ctx context.Context) (*ResealReport, error) {
	if s.ResealPass == nil {
		return nil, errNoReseal
	}
	r, err := s.ResealPass(ctx)
	return &r, err
}
