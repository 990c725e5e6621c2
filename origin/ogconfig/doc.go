// Package ogconfig manages OG configurations (/v1/og-configs): the request
// rules of compat.md's "OG configurations", their records with a public
// domain id, the one-enabled-configuration-per-origin rule (409), listing
// with cursors, and the look-up by domain id that the OG serving path uses.
//
// Details: docs/internals.md, "origin/ogconfig".
package ogconfig
