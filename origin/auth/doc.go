// Package auth authenticates API requests with HTTP Basic credentials
// (api_id:api_key) and carries the resulting Principal — organization, key
// and grant — in the request context for the permission and rate-limit checks.
package auth
