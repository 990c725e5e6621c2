// Package ogplatform is what both tiers agree on for automatic Open Graph
// images: the platform a social-card crawler belongs to, from its
// User-Agent, with the size of image that platform shows, and the one
// spelling of a page path. The edge keys OG images on the platform (never
// on the raw header) and the normalised path, and answers them with
// Vary: User-Agent for the caches in front of it; the origin reads that
// path on the site and renders or fits each platform's size.
package ogplatform
