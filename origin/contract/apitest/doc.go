// Package apitest helps tests talk to a real Pictor server over loopback:
// requests with Basic credentials, decoded responses, checks of the standard
// error body, and a settable clock. Only tests import it.
package apitest
