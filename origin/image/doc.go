// Package image is the image resource: creating an image records its
// parameters and starts its render in the background; a GET serves the
// master PNG or a JPEG, WebP or PDF rendition, rendering and converting on
// first use, each exactly once, and serves the recorded failure when the
// render failed.
package image
