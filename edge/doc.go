// Package edge is Pictor's delivery tier: a fasthttp server that answers
// image GETs and automatic Open Graph images (revalidated in the background
// once stale) from its caches and forwards every other request to an origin,
// a healthy one of those it is given (package origins). New wires the parts
// from a Config; Start and Stop run and drain it.
package edge
