// Package sharedmetric registers Prometheus collectors that several
// instances of a component share: the second gateway, fetcher or storage
// connector on a registry gets the collector the first one registered
// instead of an error.
package sharedmetric
