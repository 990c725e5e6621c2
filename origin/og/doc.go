// Package og serves automatic Open Graph images at the origin: for
// GET /v1/og/{domain_id}/{path}, it reads the page at that path of the
// configuration's site, works out the image's identity from what the page
// says, renders it once, and rechecks the page when its refresh interval
// ends, serving the current image meanwhile. Its organization may have a
// page read at once (Refresh, POST /v1/og-configs/{id}/refresh), or every
// page read again at its next request (the configuration's refresh
// generation, which each page record remembers).
//
// New work is limited, since anyone can ask for made-up paths: a client
// address may make DefaultClientRate requests a minute per configuration
// that read a page or render (in this process, keyed by
// contract.ClientKey of the edge's X-Forwarded-For); new images take a
// reservation against the configuration's caps and its organization's OG
// share (package ogconfig, exact across origins) and one render of the
// configuration's per-minute budget. A refused visitor gets 429 with
// Retry-After and LimitedMessage, whatever the reason (the organization
// out of credits included); images already made are served whatever the
// limits say.
package og
