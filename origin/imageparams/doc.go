// Package imageparams validates the image creation parameters of spec §2.2,
// shared by single creates, batch variations, template renders and signed
// image URLs, into a typed Params, and reports every invalid field in one 400.
// Params.Canonical is the deterministic identity of a request, used for
// dedupe and content-addressed image ids.
package imageparams
