// Package precompress makes and checks the Brotli (.br) and gzip (.gz)
// forms of the text files the binary embeds and the edge serves (the
// OpenAPI document, the reference page's script and licenses). They are
// made once, when the sources change, and committed next to them, so the
// edge never compresses them per request; Check proves in each embedding
// package's tests that the committed forms decode to the sources.
package precompress
