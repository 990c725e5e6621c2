// Package sharedmetric registers Prometheus collectors that several
// instances of a component share: the second gateway, fetcher or storage
// connector on a registry gets the collector the first one registered
// instead of an error. With builds and registers them in one step, as
// promauto does.
package sharedmetric
