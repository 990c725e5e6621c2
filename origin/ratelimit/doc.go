// Package ratelimit enforces the management rate limits of spec §8: a
// sliding 60-second window per organization and operation group. The
// in-memory Memory limiter keeps an exact log of admitted requests; a shared
// backend can replace it behind the Limiter interface.
package ratelimit
