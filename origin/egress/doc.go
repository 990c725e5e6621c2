// Package egress is the filtering forward proxy every Chromium render goes
// through, so that no render reaches loopback, private, link-local or cloud
// metadata addresses. A Gateway opens one Session per render on 127.0.0.1;
// the session relays absolute-form http:// requests (and WebSocket upgrades
// over them) and CONNECT tunnels, resolves each host once, refuses it if any
// answer is not allowed, and dials the checked address itself so that DNS
// rebinding cannot slip a second answer in. Check and CheckURL apply the same
// rules to a URL before a render starts.
//
// Policy.AllowPrivate (the --allow-private-urls flag) lifts the address rule
// for tests and intranets: loopback, RFC 1918, CGNAT, unique-local and the
// other non-public ranges become reachable. It never lifts the cloud
// metadata rule: all of 169.254.0.0/16 (where AWS, GCP, Azure, ECS, Tencent
// and OpenStack serve metadata, DNS and time), the other providers' metadata
// addresses (100.100.100.200, 192.0.0.192, 168.63.129.16, fd00:ec2::254,
// ...), their IPv6 embeddings and metadata host names such as
// metadata.google.internal stay blocked. The scheme rules stay as well.
//
// Policy.Upstream (or Session.SetUpstream, between renders of a reused
// session) sends a session's requests through an HTTP proxy of the
// organization: plain http in absolute form, CONNECT tunnels with a CONNECT
// of their own, both with its Basic credentials, except the Upstream.Bypass
// hosts, which go direct. The proxy's own address is checked as a site's
// is; the targets behind it are resolved by the proxy, so only what can be
// judged without a lookup (IP literals, metadata and localhost names) is
// refused. A proxy that cannot be reached, refuses the credentials or fails
// a CONNECT is answered by the session with a *ProxyError that names the
// proxy and never its credentials.
//
// A session's port is on 127.0.0.1, where any local process can connect;
// Policy.Peer says whose connections it serves. It looks each accepted
// connection's peer socket up in the kernel (NETLINK_SOCK_DIAG: the user
// that created it and its inode) and serves it only when the rule holds:
// PeerUID for a browser that runs as a user of its own, PeerProcess for
// one that shares its user (the socket must also be open in one of the
// browser's processes, read from /proc/<pid>/fd), AnyPeer for tests. A
// session always serves Session.Dial's connections (Pictor's own code);
// the zero Peer serves no one else. A refused connection is closed at once,
// unread, counted in pictor_egress_refused_peers_total and logged at Warn
// once per user and reason.
//
// What a session answers itself instead of relaying (a refusal, a failed
// lookup, dial or upstream, an error of the internal host) carries
// AnswerHeader with a marker no site knows, and is kept as a Failure:
// Session.Answered and Session.Tunnel let a render tell such an answer, or
// a failed tunnel, from a page of the site and say what went wrong.
//
// Hosts are read the way Chromium and inet_aton read them: decimal, octal,
// hex and short IPv4 forms, bracketed IPv6 with zones, trailing dots, upper
// case, and IDN (UTS #46 as browsers apply it, through golang.org/x/net/idna:
// mapped, validated, punycode decoded and checked). The normalised host is
// the one the address rules judge and the one dialed, so a spelling that maps
// to localhost or 127.0.0.1 is refused as those are. A host whose last label
// is numeric is an IPv4 address or invalid, never a name sent to DNS.
package egress
