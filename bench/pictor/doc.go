// Package pictor runs the Pictor under test: `pictor serve` started on a
// fresh data directory and loopback ports, stopped with SIGTERM, its CPU
// charged with its Chromium's. It is also the scenarios' client of that
// server: create, fetch and render images through its API, read its
// metrics, and learn which serve flags a binary has. For the tests that run
// pictor as a process, it builds the binary of the checkout (Build).
package pictor
