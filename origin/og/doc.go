// Package og serves automatic Open Graph images at the origin: for
// GET /v1/og/{domain_id}/{path}, it reads the page at that path of the
// configuration's site, works out the image's identity from what the page
// says, renders it once, and rechecks the page when its refresh interval
// ends, serving the current image meanwhile.
package og
