// Package origin is Pictor's origin tier: the REST API with its
// authentication, permissions and rate limits, the embedded store of records,
// and (in later components) rendering. New wires the parts from a Config;
// Start and Stop run and drain it.
package origin
