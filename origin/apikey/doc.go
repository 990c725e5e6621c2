// Package apikey manages API keys: their records (secrets sealed at rest),
// the create/update request rules of spec §2.4, the authority rules of
// §4.2, listing with cursors and filters, and Basic-auth verification.
package apikey
