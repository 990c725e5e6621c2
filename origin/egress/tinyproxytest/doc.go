// Package tinyproxytest runs Debian's tinyproxy on a loopback port, with
// Basic authentication and its own log, for tests that route requests
// through a real forward proxy. Only tests import it.
package tinyproxytest
