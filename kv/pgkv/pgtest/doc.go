// Package pgtest runs private PostgreSQL 15 servers for tests: initdb into a
// temporary directory, the server as the postgres user when the test runs
// as root, listening on 127.0.0.1 only, with fsync on and password (SCRAM)
// authentication. Shared gives a test binary one cluster, Database a fresh
// database per test, New a cluster of the test's own to stop and restart.
package pgtest
