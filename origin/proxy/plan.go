package proxy

import (
	"strconv"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/plan"
)

// CheckPlan returns a 403 *apierr.Error unless the organization's plan
// includes delivery options (plan.Plan.Delivery): proxies need the smallest
// such plan or a larger one (spec §2.2 proxy_id, §5 rule 3). The message
// names that plan and its allowance, and the organization's plan.
func CheckPlan(o *org.Org) error {
	if o != nil && o.PlanInfo().Delivery {
		return nil
	}
	current := "no"
	if o != nil && o.Plan != "" {
		current = "the " + o.Plan
	}
	return apierr.Forbidden("Proxies need %s; this organization is on %s plan", requirement, current)
}

// requirement names the smallest plan with delivery options:
// "the pro plan or higher (10,000 images a month)".
var requirement = func() string {
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
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
