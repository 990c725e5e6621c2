// Package contract is what the edge and the origin agree on, in one place:
// the purge channel's path, frames and event kinds, the internal X-Pictor-*
// headers the origin sets for the edge, the purge tag formats, and the rule
// for request ids.
//
// The packages under origin/contract/ are everything of the origin that the
// edge tier may import: the standard error body (apierr), request field
// validation (field), image conversions (codec), structured logs (logging),
// the HTTP/1.1 request framing both tiers accept (framing), the crawlers and
// their card sizes (ogplatform), the test kit for the standard body
// (apitest) and the build-time compression of the files the edge serves
// from the binary (precompress). A test in edge/ fails
// when an edge package imports any other origin package.
package contract
