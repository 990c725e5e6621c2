// Package edgehub tells edges what to drop. Every purge (deleted images, a
// suspended organization, a disabled key's signed URLs) is appended to a
// durable log and pushed to every connected edge; Publish returns once each
// connected edge acknowledged it. An edge that was away replays the log from
// its last acknowledged position when it reconnects, before it serves again.
package edgehub
