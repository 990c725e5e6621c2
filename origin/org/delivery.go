package org

import (
	"strconv"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/plan"
)

// RequireDelivery returns a 403 *apierr.Error unless the organization's
// plan includes delivery options (plan.Plan.Delivery): proxies and storage
// destinations need the smallest such plan or a larger one (spec §2.2,
// §5 rule 3), whatever the key's permissions. what names the feature
// ("Proxies"); the message names the plan needed with its allowance, and
// the organization's plan.
func RequireDelivery(o *Org, what string) error {
	if o != nil && o.PlanInfo().Delivery {
		return nil
	}
	current := "no"
	if o != nil && o.Plan != "" {
		current = "the " + o.Plan
	}
	return apierr.Forbidden("%s need %s; this organization is on %s plan", what, deliveryRequirement, current)
}

// deliveryRequirement names the smallest plan with delivery options: "the
// pro plan or higher (10,000 images a month)".
var deliveryRequirement = func() string {
	for _, name := range plan.Names() {
		if p, _ := plan.Lookup(name); p.Delivery {
			return "the " + p.Name + " plan or higher (" + thousands(p.Credits) + " images a month)"
		}
	}
	return "a plan with delivery options"
}()

// thousands writes n with a comma every three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
