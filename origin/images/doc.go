// Package images is the image resource: creating an image records its
// parameters and starts its render in the background; a GET serves the
// master PNG or a JPEG, WebP or PDF rendition, rendering and converting on
// first use, each exactly once across every origin sharing the store (a
// render lease in the store, service_lease.go), and serves the recorded
// failure when the render failed. Credits are charged, and every image
// record changed, in kv.Store.Update transactions under locks every origin
// takes (the organization's credits, the image's record). An image with a storage_destination_id is also written
// to that bucket: its master in the background once rendered, and on
// PUT /v1/store (service_store.go, handler_store.go); with the
// destination's hcti_storage_disabled it has no public URL and its files
// are dropped once written.
//
// Details: docs/internals.md, "origin/images".
package images
