// Package benchtest holds what the bench packages' tests share: results
// with latencies spread evenly over a range, the head of a PNG of a given
// size, and a canned HTTP/1.1 server on loopback. Only tests import it.
package benchtest
