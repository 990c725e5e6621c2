// Package card makes the pages the benchmark renders — the 1200×630 social
// card at device scale 2, its flat variant and the edge scenarios' smaller
// tiles — and checks from its first bytes that an image is the card's PNG,
// or a WebP of the width a resize asked for.
package card
