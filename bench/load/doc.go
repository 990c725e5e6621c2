// Package load is the harness's load generator and what it measures with:
// Drive runs an Op closed-loop from a number of clients and returns a
// Result, its latencies in a Histogram; Progress shows a run live.
// KeepAlive is its fast path for small GETs (one keep-alive HTTP/1.1
// connection per client, answers parsed in place), for servers faster
// than net/http's client.
package load
