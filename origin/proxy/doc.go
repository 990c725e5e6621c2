// Package proxy manages proxies (/v1/proxies): the HTTP(S) proxies an
// organization routes a render's outbound traffic through (spec §2.2
// proxy_id, §2.6; compat.md "Proxies"). It validates requests, keeps the
// records with their passwords sealed, lists them with cursors, and gives
// the render path Store.Get and Store.Credentials.
//
// Details: docs/internals.md, "origin/proxy".
package proxy
