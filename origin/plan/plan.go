package plan

import (
	"slices"
	"time"
)

// Plan is one subscription level.
type Plan struct {
	Name string
	// Credits is the image credit allowance per billing period.
	Credits int64
	// Templates is the most templates an organization may hold.
	Templates int
	// MaxWaitCap caps max_wait_ms.
	MaxWaitCap time.Duration
	// Delivery enables proxies and storage destinations.
	Delivery bool
	// DedupeHTMLDefault is the default dedupe window of HTML renders.
	DedupeHTMLDefault time.Duration
	// DedupeHTMLMax is the longest dedupe window an HTML render may ask for.
	DedupeHTMLMax time.Duration
	// DedupeHTMLFixed restricts HTML dedupe windows to 0 or the default.
	DedupeHTMLFixed bool
}

const day = 24 * time.Hour

var plans = []Plan{
	{Name: "free", Credits: 50, Templates: 1, MaxWaitCap: 5 * time.Second,
		DedupeHTMLDefault: 30 * day, DedupeHTMLMax: 30 * day, DedupeHTMLFixed: true},
	{Name: "basic", Credits: 1000, Templates: 1000, MaxWaitCap: 10 * time.Second,
		DedupeHTMLDefault: 30 * day, DedupeHTMLMax: 30 * day, DedupeHTMLFixed: true},
	{Name: "pro", Credits: 10000, Templates: 1000, MaxWaitCap: 10 * time.Second, Delivery: true,
		DedupeHTMLDefault: 180 * day, DedupeHTMLMax: 180 * day},
	{Name: "scale", Credits: 100000, Templates: 1000, MaxWaitCap: 10 * time.Second, Delivery: true,
		DedupeHTMLDefault: 365 * day, DedupeHTMLMax: 365 * day},
}

// Lookup returns the plan with the given name.
func Lookup(name string) (Plan, bool) {
	i := slices.IndexFunc(plans, func(p Plan) bool { return p.Name == name })
	if i < 0 {
		return Plan{}, false
	}
	return plans[i], true
}

// Names lists the plan names from smallest to largest.
func Names() []string {
	names := make([]string, len(plans))
	for i, p := range plans {
		names[i] = p.Name
	}
	return names
}
