package console

import (
	"fmt"
	"time"
)

// chart is a bar chart of credits used per day, drawn by the server as
// inline SVG (no script).
type chart struct {
	Width, Height int
	Bars          []bar
	Max           int64
	Total         int64
	From, To      string
}

type bar struct {
	X, Y, W, H int
	Day        string
	N          int64
}

// chartDays bounds the days drawn: a billing period is a month.
const chartDays = 31

// dailyChart draws the days from the billing period's start (RFC 3339;
// the last chartDays days when it is unknown) to now, from the usage
// report's day buckets.
func dailyChart(days map[string]int64, periodStart string, now time.Time) *chart {
	now = now.UTC()
	end := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	start := end.AddDate(0, 0, -(chartDays - 1))
	if t, err := time.Parse(time.RFC3339, periodStart); err == nil {
		t = t.UTC()
		if t = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC); t.After(start) {
			start = t
		}
	}
	counts := map[string]int64{}
	for k, n := range days {
		if t, err := time.Parse(time.RFC3339, k); err == nil {
			counts[t.UTC().Format(time.DateOnly)] += n
		}
	}
	c := &chart{Height: 120, From: start.Format(time.DateOnly), To: end.Format(time.DateOnly)}
	n := int(end.Sub(start)/(24*time.Hour)) + 1
	const slot = 12
	c.Width = max(n, chartDays) * slot // a short period keeps narrow bars
	for i := range n {
		day := start.AddDate(0, 0, i).Format(time.DateOnly)
		v := counts[day]
		c.Total += v
		c.Max = max(c.Max, v)
		c.Bars = append(c.Bars, bar{X: i * slot, W: slot - 2, Day: day, N: v})
	}
	for i := range c.Bars {
		if c.Max > 0 {
			c.Bars[i].H = int(c.Bars[i].N * int64(c.Height) / c.Max)
		}
		c.Bars[i].Y = c.Height - c.Bars[i].H
	}
	return c
}

// Label is the chart's text alternative.
func (c *chart) Label() string {
	return fmt.Sprintf("Credits used per day from %s to %s: %d in all, at most %d in a day.", c.From, c.To, c.Total, c.Max)
}
