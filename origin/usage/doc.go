// Package usage meters image credits: it charges an organization's billing
// period atomically with the writes that create images, refuses charges past
// the plan's allowance, and keeps hourly, daily and monthly counts for
// GET /v1/usage.
package usage
