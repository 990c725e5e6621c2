// Package apitest helps tests talk to a real Pictor server over loopback:
// requests with Basic credentials, decoded responses, checks of the standard
// error body, a settable clock, and the raw-socket table of request framing
// both tiers are tested with. Only tests import it.
package apitest
