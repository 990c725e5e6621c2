package proxy

import "github.com/pictorhq/pictor/origin/org"

// CheckPlan returns a 403 *apierr.Error unless the organization's plan
// includes delivery options (org.RequireDelivery): proxies need the
// smallest such plan or a larger one (spec §2.2 proxy_id, §5 rule 3).
func CheckPlan(o *org.Org) error { return org.RequireDelivery(o, "Proxies") }
