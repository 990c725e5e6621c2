package contract

import "time"

// StreamPath is the purge channel: an edge POSTs to it with
// "Authorization: Bearer <edge token>" and the query parameters
// StreamSince and StreamName. The response streams Events as JSON lines;
// the request body carries the edge's acknowledgements, one decimal
// sequence number per line, each sent once the event is applied.
const StreamPath = "/internal/edge/stream"

// Query parameters of StreamPath.
const (
	StreamSince = "since" // the last sequence number the edge applied
	StreamName  = "name"  // the edge's name, for the origin's logs
)

// HeartbeatInterval is how often the origin sends a Ready frame on an
// open stream. An edge that hears nothing for three of them takes the
// stream for dead and opens another: a connection can stay open with
// nothing alive behind it (a peer gone without a FIN, a server stuck
// after a handler's abort), and purges would stop reaching the edge
// without a word.
const HeartbeatInterval = 15 * time.Second

// StreamRealm is the realm of the channel's WWW-Authenticate challenge.
const StreamRealm = "pictor-edge"

// MinEdgeToken is the shortest edge token the origin accepts.
const MinEdgeToken = 16

// Event is one line of the purge channel.
type Event struct {
	Seq  uint64   `json:"seq"`
	Kind string   `json:"kind"`
	IDs  []string `json:"ids"`
}

// Kinds of purge event; each names what its IDs are.
const (
	ImagesDeleted = "images.deleted" // IDs: image ids
	OrgSuspended  = "org.suspended"  // IDs: the organization id
	KeyDisabled   = "key.disabled"   // IDs: the api_id whose signed URLs stop working (its KeyTag)
	TagsPurged    = "tags.purged"    // IDs: purge tags, such as TemplateTag(id) after a template changed
)

// Frames of the purge channel, which carry no IDs.
const (
	// Ready says the edge has every event up to Seq: sent once the replay
	// is done, then as a heartbeat every HeartbeatInterval. An edge serves
	// only after its first.
	Ready = "ready"
	// Reset says the edge's position means nothing against this log: it
	// fell further behind than the log keeps, or it is ahead of the log's
	// head (the origin's store was restored or replaced). The edge drops
	// its whole cache and continues from Seq.
	Reset = "reset"
)
