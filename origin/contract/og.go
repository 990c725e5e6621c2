package contract

// OGPrefix starts the public path of automatic Open Graph images:
// OGPrefix + "{domain_id}/{path...}". The edge answers it from its cache
// and asks the origin, at the same path with the path normalised (see
// ogplatform.NormalizePath), on a miss or once the entry is due
// for a recheck.
const OGPrefix = "/v1/og/"

// Headers of the OG path between the tiers.
const (
	// HeaderOGPlatform is the edge's request header naming the crawler's
	// platform (ogplatform.Platform.Name), so the origin need not read the
	// User-Agent again.
	HeaderOGPlatform = "X-Pictor-Og-Platform"
	// HeaderOGMode is the origin's answer header with the configuration's
	// optimization mode: OGFit asks the edge to fit the answer into the
	// platform's size itself (one render for every platform).
	HeaderOGMode = "X-Pictor-Og-Mode"
	// HeaderOGScale comes with OGFit when the image is not at device scale
	// 1: the edge fits it into the platform's size times this scale (a
	// decimal number), so the image keeps its density.
	HeaderOGScale = "X-Pictor-Og-Scale"
)

// Values of HeaderOGMode.
const (
	OGAsIs = "as-is" // the answer is the platform's image already
	OGFit  = "fit"   // the edge fits the answer into the platform's size, cropping, never stretching
)
