// Package clustertest holds the fault tests of the local cluster
// (deploy/cluster.sh, issue 18): one cluster of PostgreSQL, versitygw, two
// origins and two edges per test binary, on which an origin is killed
// during a burst of creates, an edge is killed, PostgreSQL restarted and S3
// stopped, and credits, management rate limits and purges are checked
// across both origins. It has no code outside its tests.
package clustertest
