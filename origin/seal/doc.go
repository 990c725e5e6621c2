// Package seal keeps secrets at rest: it loads or creates the master key
// and seals values with AES-256-GCM under it. It also derives MAC keys from
// the master key for opaque tokens such as pagination cursors.
package seal
