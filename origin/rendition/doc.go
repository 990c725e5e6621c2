// Package rendition is the image pipeline behind the image handlers
// (origin/images) and the OG pages (origin/og): it records images, charges
// and refunds their credits, renders each file exactly once across every
// origin sharing the store (flights and render leases), converts and
// compacts masters, and writes images to their storage destinations. It
// reads no HTTP request: the handlers parse, authorize and answer.
//
// Details: docs/internals.md, "origin/images and origin/rendition".
package rendition
