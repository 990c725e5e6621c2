// Package ratelimit enforces the management rate limits of spec §8: a
// sliding 60-second window per organization and operation group. Memory
// keeps an exact log of admitted requests in the process; Store keeps the
// same log in a kv.Store, so that every origin sharing the store draws on
// one window.
package ratelimit
