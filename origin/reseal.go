package origin

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/admin"
	"github.com/pictorhq/pictor/origin/apikey"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/proxy"
	"github.com/pictorhq/pictor/origin/seal"
	"github.com/pictorhq/pictor/origin/storedest"
)

// ResealReport is what Reseal did (admin.ResealReport, which `pictor
// admin reseal` prints).
type ResealReport = admin.ResealReport

// Reseal seals again under box's current master key every sealed value of
// store that is not: API key secrets, proxy passwords and storage
// destination secrets sealed under a previous master key or in an older
// format. It is the pass of a master key rotation (`pictor admin
// reseal`), and runs while origins serve the store: each record is
// rewritten in a transaction holding its organization's lock, which every
// writer of such records takes, and reread there, so no concurrent write
// is lost. Running it again is harmless: what is current stays.
//
// Values that no key of box opens are left as they are and counted as
// Failed (each logged by record id); the report is then not Done, and
// dropping a previous master key would lose them if it sealed them. The
// pass stops at ctx's end or at the first store error, returning what it
// did so far with the error.
func Reseal(ctx context.Context, store kv.Store, box *seal.Box) (ResealReport, error) {
	r := ResealReport{CurrentKey: box.KeyID()}
	var err error
	if r.APIKeys, err = apikey.NewStore(store, box, org.NewStore(store, nil), nil).Reseal(ctx); err != nil {
		return r, fmt.Errorf("reseal API keys: %w", err)
	}
	if r.Proxies, err = proxy.NewStore(store, box, nil).Reseal(ctx); err != nil {
		return r, fmt.Errorf("reseal proxies: %w", err)
	}
	if r.StorageDestinations, err = storedest.NewStore(store, box, nil).Reseal(ctx); err != nil {
		return r, fmt.Errorf("reseal storage destinations: %w", err)
	}
	t := r.Total()
	slog.InfoContext(ctx, "sealed values sealed again under the current master key", "current_key", r.CurrentKey,
		"records", t.Records, "resealed", t.Resealed, "failed", t.Failed)
	return r, nil
}

// Reseal runs the pass of Reseal over the origin's store with its master
// keys: for `pictor admin reseal` through the admin endpoint of a running
// origin, which holds the embedded store.
func (o *Origin) Reseal(ctx context.Context) (ResealReport, error) {
	return Reseal(ctx, o.store, o.box)
}
