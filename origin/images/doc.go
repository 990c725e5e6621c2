// Package images is the image resource's HTTP handlers: creation (single,
// batch, templates, signed URLs), previews (rendered, never stored),
// GET of a master or rendition, listing, deletion and PUT /v1/store, each
// over the pipeline of origin/rendition.
//
// Details: docs/internals.md, "origin/images and origin/rendition".
package images
