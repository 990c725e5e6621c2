package origin

import (
	"net/http"

	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/respond"
	"github.com/pictorhq/pictor/origin/usage"
)

// usageReport handles GET /v1/usage.
func (o *Origin) usageReport(w http.ResponseWriter, r *http.Request) error {
	p := auth.FromContext(r.Context())
	snap := o.store.Snapshot()
	defer snap.Close()
	rep, err := usage.Read(r.Context(), snap, p.Org, o.cfg.Now())
	if err != nil {
		return err
	}
	respond.JSON(w, r, http.StatusOK, rep)
	return nil
}
