package ogpage

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

const (
	// MinRecheck is the shortest time before a page is fetched again,
	// whatever the configuration and the page say.
	MinRecheck = 60 * time.Second
	// MaxSourceLifetime bounds how far a page's own caching headers can
	// push its next recheck: one year, the longest refresh_interval_s.
	MaxSourceLifetime = 365 * 24 * time.Hour
)

// Caching is what a response says about revalidating the page.
type Caching struct {
	// ETag and LastModified are the validators for the next conditional
	// fetch, as sent ("" when absent). After a 304 without them, they are
	// the Request's.
	ETag         string
	LastModified string
	// Lifetime is how long the page stays fresh by its own account, counted
	// from when it was fetched: Cache-Control s-maxage, else max-age, else
	// Expires minus Date (or minus the time of arrival when Date is
	// absent), less the Age the response already had. It is 0 when the
	// page says nothing, or says no-cache or no-store.
	Lifetime time.Duration
}

// Fresh returns when a page fetched at now must be rechecked, given the
// configuration's refresh interval: after the longer of the interval and
// the page's Lifetime (capped at MaxSourceLifetime), and never before
// MinRecheck. The page's headers can lengthen the interval, never shorten
// it: no-cache and no-store leave the configured interval as it is.
func (c Caching) Fresh(now time.Time, configured time.Duration) time.Time {
	return now.Add(max(configured, min(c.Lifetime, MaxSourceLifetime), MinRecheck))
}

// parseCaching reads the caching headers of a response that arrived at
// received.
func parseCaching(h http.Header, received time.Time) Caching {
	c := Caching{ETag: h.Get("ETag"), LastModified: h.Get("Last-Modified")}
	cc := parseCacheControl(h.Values("Cache-Control"))
	if cc.noCache || cc.noStore {
		return c
	}
	var lifetime time.Duration
	switch {
	case cc.sMaxAge >= 0:
		lifetime = cc.sMaxAge
	case cc.maxAge >= 0:
		lifetime = cc.maxAge
	case h.Get("Expires") != "":
		// An invalid Expires ("0", "-1") means already expired.
		expires, err := http.ParseTime(h.Get("Expires"))
		if err != nil {
			return c
		}
		date, err := http.ParseTime(h.Get("Date"))
		if err != nil {
			date = received
		}
		lifetime = expires.Sub(date)
	default:
		return c
	}
	if age, ok := deltaSeconds(h.Get("Age")); ok {
		lifetime -= age
	}
	c.Lifetime = max(lifetime, 0)
	return c
}

// cacheControl is the part of Cache-Control that matters here; a missing
// or invalid max-age is -1.
type cacheControl struct {
	maxAge, sMaxAge  time.Duration
	noCache, noStore bool
}

// parseCacheControl reads Cache-Control field values. Directive names are
// case-insensitive; the first valid max-age and s-maxage count; a
// no-cache naming fields (no-cache="Set-Cookie") concerns only those
// fields and is not a no-cache of the page.
func parseCacheControl(values []string) cacheControl {
	cc := cacheControl{maxAge: -1, sMaxAge: -1}
	for _, v := range values {
		for d := range strings.SplitSeq(v, ",") {
			name, arg, hasArg := strings.Cut(strings.TrimSpace(d), "=")
			name = strings.ToLower(strings.TrimSpace(name))
			arg = strings.Trim(strings.TrimSpace(arg), `"`)
			switch name {
			case "no-store":
				cc.noStore = true
			case "no-cache":
				if !hasArg || arg == "" {
					cc.noCache = true
				}
			case "max-age":
				if s, ok := deltaSeconds(arg); ok && cc.maxAge < 0 {
					cc.maxAge = s
				}
			case "s-maxage":
				if s, ok := deltaSeconds(arg); ok && cc.sMaxAge < 0 {
					cc.sMaxAge = s
				}
			}
		}
	}
	return cc
}

// deltaSeconds reads a non-negative number of seconds (RFC 9111 §1.2.2);
// one too large to hold is taken as 2^31 seconds, as the RFC asks.
func deltaSeconds(s string) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > 1<<31 {
		n = 1 << 31
	}
	return time.Duration(n) * time.Second, true
}
