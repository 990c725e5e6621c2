// Package egress is the filtering forward proxy every Chromium render goes
// through, so that no render reaches loopback, private, link-local or cloud
// metadata addresses. A Gateway opens one Session per render on 127.0.0.1;
// the session relays absolute-form http:// requests (and WebSocket upgrades
// over them) and CONNECT tunnels, resolves each host once, refuses it if any
// answer is not allowed, and dials the checked address itself so that DNS
// rebinding cannot slip a second answer in. Check and CheckURL apply the same
// rules to a URL before a render starts.
//
// Details: docs/internals.md, "origin/egress".
package egress
