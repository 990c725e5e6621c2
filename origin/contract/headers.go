package contract

// Headers between the tiers.
const (
	// HeaderRequestID carries the request id both ways: the edge sends the
	// caller's (when ValidRequestID) or its own, the origin logs it and
	// echoes it.
	HeaderRequestID = "X-Request-Id"

	// InternalPrefix starts every header the origin sets for the edge
	// only; the edge strips them from what it relays to clients.
	InternalPrefix = "X-Pictor-"
	// HeaderOrg names the organization owning an image answer, for
	// OrgSuspended purges.
	HeaderOrg = "X-Pictor-Org"
	// HeaderImage names the image of an answer, for ImagesDeleted purges.
	HeaderImage = "X-Pictor-Image"
	// HeaderTag lists an answer's purge tags, separated by spaces (see
	// JoinTags), for KeyDisabled and TagsPurged purges.
	HeaderTag = "X-Pictor-Tag"
)

// MaxRequestID bounds an inbound request id.
const MaxRequestID = 128

// ValidRequestID reports whether a caller's request id may be kept: short
// printable ASCII without spaces, so that it can never break a log line or
// a header.
func ValidRequestID[T string | []byte](id T) bool {
	if len(id) == 0 || len(id) > MaxRequestID {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}
