// Package kv is Pictor's storage interface: an ordered key-value store with
// durable writes, atomic batches, prefix iteration and consistent snapshots.
// The embedded default is pebble (package kv/pebblekv); a distributed backend
// only has to implement Store to take its place.
//
// # Key layout
//
// Keys are byte strings built from a short family prefix and '/'-separated
// identifiers. Identifiers are UUIDs (v7 where time order matters), so keys
// of one family sort by creation time. Values are JSON documents unless noted.
//
//	org/<org_id>                      organization record
//	key/<key_id>                      API key record (secret sealed with the master key)
//	key-api/<api_id>                  key_id of the key whose Basic-auth username is api_id
//	org-key/<org_id>/<key_id>         empty; lists an organization's keys in creation order
//	ogc/c/<id>                        OG configuration record
//	ogc/d/<domain_id>                 id of the OG configuration with that domain id
//	ogc/o/<org_id>/<id>               empty; an organization's OG configurations in creation order
//	ogc/e/<org_id>/<base_url>         id of the organization's enabled OG configuration for that origin
//	ogc/n/<id>                        an OG configuration's new images of the UTC day and the billing period
//	ogc/s/<org_id>                    the credits an organization's OG images spent in the billing period
//	oauth-client/<client_id>          registered OAuth client (secret as its SHA-256)
//	oauth-code/<sha256 of code>       authorization code, kept used with its grant until it expires
//	oauth-refresh/<sha256 of token>   refresh token, kept used until it expires
//	oauth-grant/<grant_id>            approved connection: organization, key, client, scopes, revocation
//	oauth-grant-key/<key_id>/<gid>    empty; a key's grants
//	oauth-grant-org/<org_id>/<gid>    empty; an organization's grants
//	oauth-expiry/<unix s hex>/<key>   empty; what the OAuth sweep removes, in time order
//	img-lease/<image_id>/<format>     render lease: holder instance and expiry (origin/rendition)
//	usage/<org_id>/owed/<id>/<at>     a refund written with its failure, settled under credits/<org>
//	rl/<key>                          a management rate-limit window's admissions (shared store only)
//	edge-event/<seq, 8 bytes BE>      purge log event, with the hub that appended it
//	edge-ack/<hub>/<stream>           an edge's position, as its origin records it (shared store only)
//
// Families added by later components document themselves here as well
// (images and usage in origin/rendition/record.go and origin/usage).
//
// # Transactions
//
// Store.Update runs a read-modify-write under a named lock that every
// process sharing the store agrees on. Names in use: credits/<org>,
// image/<id>, api-key/<org>, proxy/<org>, og-config/<org> (also the OG caps' counts),
// storage-destination/<org>, template/org/<org>, template/<id>,
// oauth/code/<hash>, oauth/grant/<id>, the OG page key, ratelimit/<key>,
// edge-event.
package kv
