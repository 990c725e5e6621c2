// Package cluster runs the Pictor cluster under test: deploy/cluster.sh's
// PostgreSQL, S3 server, two origins and two edges on loopback, brought up
// in a directory of their own and always brought down. It tells the
// cluster's addresses and credentials, the CPU each part used (edges,
// origins with their Chromium, PostgreSQL with its backends, S3) and the
// transactions PostgreSQL counted.
package cluster
