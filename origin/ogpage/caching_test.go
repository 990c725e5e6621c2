package ogpage

import (
	"net/http"
	"testing"
	"time"
)

// TestFresh has a row per caching header a source page may send: the
// recheck comes after max(configured, the page's own lifetime), never
// sooner than MinRecheck.
func TestFresh(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	date := now.Add(-10 * time.Second) // the source's clock, a little behind
	day := 24 * time.Hour
	for _, tc := range []struct {
		name       string
		header     http.Header
		configured time.Duration
		want       time.Duration // after now
		wantLife   time.Duration
	}{
		{name: "nothing said: the configured interval", header: http.Header{}, configured: day, want: day},
		{name: "max-age longer than the interval lengthens it", header: h("Cache-Control", "public, max-age=172800"), configured: day, want: 2 * day, wantLife: 2 * day},
		{name: "max-age shorter than the interval does not shorten it", header: h("Cache-Control", "max-age=60"), configured: day, want: day, wantLife: time.Minute},
		{name: "s-maxage beats max-age", header: h("Cache-Control", "max-age=100000, s-maxage=7200"), configured: time.Hour, want: 2 * time.Hour, wantLife: 2 * time.Hour},
		{name: "s-maxage beats max-age even when shorter", header: h("Cache-Control", "s-maxage=10, max-age=100000"), configured: time.Hour, want: time.Hour, wantLife: 10 * time.Second},
		{name: "directives are case-insensitive, values may be quoted", header: h("Cache-Control", `Max-Age="7200"`), configured: time.Hour, want: 2 * time.Hour, wantLife: 2 * time.Hour},
		{name: "several Cache-Control fields are one list", header: http.Header{"Cache-Control": {"public", "max-age=7200"}}, configured: time.Hour, want: 2 * time.Hour, wantLife: 2 * time.Hour},
		{name: "the first max-age counts", header: h("Cache-Control", "max-age=7200, max-age=1"), configured: time.Hour, want: 2 * time.Hour, wantLife: 2 * time.Hour},
		{name: "an invalid max-age is skipped", header: h("Cache-Control", "max-age=soon, max-age=7200"), configured: time.Hour, want: 2 * time.Hour, wantLife: 2 * time.Hour},
		{name: "Age already spent counts against max-age", header: hh("Cache-Control", "max-age=7200", "Age", "3600"), configured: time.Minute, want: time.Hour, wantLife: time.Hour},
		{name: "Age beyond max-age leaves nothing", header: hh("Cache-Control", "max-age=60", "Age", "600"), configured: time.Hour, want: time.Hour},
		{name: "Expires relative to Date", header: hh("Date", fmtTime(date), "Expires", fmtTime(date.Add(3*time.Hour))), configured: time.Hour, want: 3 * time.Hour, wantLife: 3 * time.Hour},
		{name: "Expires without Date: relative to arrival", header: h("Expires", fmtTime(now.Add(3*time.Hour))), configured: time.Hour, want: 3 * time.Hour, wantLife: 3 * time.Hour},
		{name: "max-age beats Expires", header: hh("Cache-Control", "max-age=7200", "Expires", fmtTime(now.Add(9*time.Hour))), configured: time.Hour, want: 2 * time.Hour, wantLife: 2 * time.Hour},
		{name: "Expires in the past", header: hh("Date", fmtTime(date), "Expires", fmtTime(date.Add(-time.Hour))), configured: time.Hour, want: time.Hour},
		{name: "an invalid Expires means expired", header: h("Expires", "0"), configured: time.Hour, want: time.Hour},
		{name: "no-store does not shorten the interval", header: h("Cache-Control", "no-store"), configured: day, want: day},
		{name: "no-cache does not shorten the interval", header: h("Cache-Control", "no-cache"), configured: day, want: day},
		{name: "no-store does not lengthen it either", header: h("Cache-Control", "no-store, max-age=172800"), configured: day, want: day},
		{name: "no-cache does not lengthen it either", header: hh("Cache-Control", "no-cache", "Expires", fmtTime(now.Add(9*day))), configured: day, want: day},
		{name: "a no-cache naming fields is not the page's", header: h("Cache-Control", `no-cache="Set-Cookie", max-age=172800`), configured: day, want: 2 * day, wantLife: 2 * day},
		{name: "no-store with a tiny interval: the floor", header: h("Cache-Control", "no-store"), configured: time.Second, want: MinRecheck},
		{name: "the floor holds for a tiny interval", header: http.Header{}, configured: 10 * time.Second, want: MinRecheck},
		{name: "the floor holds for a zero interval", header: h("Cache-Control", "max-age=30"), configured: 0, want: MinRecheck, wantLife: 30 * time.Second},
		{name: "a huge max-age lengthens to a year at most", header: h("Cache-Control", "max-age=999999999999999999999"), configured: day, want: MaxSourceLifetime, wantLife: (1 << 31) * time.Second},
		{name: "a configured interval beyond a year stands", header: h("Cache-Control", "max-age=60"), configured: 400 * day, want: 400 * day, wantLife: time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := parseCaching(tc.header, now)
			if c.Lifetime != tc.wantLife {
				t.Errorf("Lifetime = %v, want %v", c.Lifetime, tc.wantLife)
			}
			if got := c.Fresh(now, tc.configured); !got.Equal(now.Add(tc.want)) {
				t.Errorf("Fresh = now+%v, want now+%v", got.Sub(now), tc.want)
			}
		})
	}
}

func TestParseCachingValidators(t *testing.T) {
	c := parseCaching(hh("ETag", `W/"v1"`, "Last-Modified", "Sun, 01 Mar 2026 10:00:00 GMT"), time.Now())
	if c.ETag != `W/"v1"` || c.LastModified != "Sun, 01 Mar 2026 10:00:00 GMT" {
		t.Errorf("validators = %q, %q", c.ETag, c.LastModified)
	}
}

func h(k, v string) http.Header { return http.Header{http.CanonicalHeaderKey(k): {v}} }

func hh(k1, v1, k2, v2 string) http.Header {
	x := h(k1, v1)
	x.Set(k2, v2)
	return x
}

func fmtTime(t time.Time) string { return t.UTC().Format(http.TimeFormat) }
