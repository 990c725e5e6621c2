// Package edgehub tells edges what to drop. Every purge (deleted images, a
// suspended organization, a disabled key's signed URLs) is appended to a
// durable log in the store, which every hub sharing that store tails and
// streams to the edges connected to it; Publish returns once each connected
// edge, wherever it is connected, acknowledged the event. An edge that was
// away replays the log from its last acknowledged position when it
// reconnects, to any origin, before it serves again.
//
// Edges authenticate with a token. A hub accepts several at once
// (ParseTokens: --edge-token OLD,NEW, or edge.token with a token a line),
// so that edges move to a new token one by one, without downtime.
package edgehub
