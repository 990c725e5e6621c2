package consent

import "strings"

// BlockURL reports whether a request for rawURL loads a consent tool and
// should fail before it is sent. Only http, https, ws and wss URLs can
// match. It does not know the page or the request's type, so it applies
// rules as if every request were third-party and of every type; the rule
// set is written for that (CMP hosts and paths, never a vendor's own site).
// Use it for subrequests, not for the address a render was asked for.
func BlockURL(rawURL string) bool {
	rs := rules()
	return rs != nil && rs.blocks(rawURL)
}

func (rs *ruleset) blocks(rawURL string) bool {
	host, hostStart, hostEnd, ok := splitURL(rawURL)
	if !ok {
		return false
	}
	lower := lowerASCII(rawURL)
	if !rs.matchAny(rs.blockHost, rs.blockAny, rawURL, lower, host, hostStart, hostEnd) {
		return false
	}
	return !rs.matchAny(rs.allowHost, rs.allowAny, rawURL, lower, host, hostStart, hostEnd)
}

// matchAny reports whether a rule of byHost (under host or one of its
// parents) or of others matches the URL.
func (rs *ruleset) matchAny(byHost map[string][]netRule, others []netRule, raw, lower, host string, hostStart, hostEnd int) bool {
	for s := host; s != ""; {
		for _, r := range byHost[s] {
			u := lower
			if r.matchCase {
				u = raw
			}
			if match(r.pattern, u[hostEnd:], r.endAnch) {
				return true
			}
		}
		i := strings.IndexByte(s, '.')
		if i < 0 {
			break
		}
		s = s[i+1:]
	}
	for i := range others {
		r := &others[i]
		u := lower
		if r.matchCase {
			u = raw
		}
		if r.matches(u, hostStart, hostEnd) {
			return true
		}
	}
	return false
}

// matches applies a rule that is not indexed by host to a whole URL.
func (r *netRule) matches(u string, hostStart, hostEnd int) bool {
	switch {
	case r.hostAnchor:
		for i := hostStart; i < hostEnd; i++ {
			if (i == hostStart || u[i-1] == '.') && match(r.pattern, u[i:], r.endAnch) {
				return true
			}
		}
		return false
	case r.startAnch:
		return match(r.pattern, u, r.endAnch)
	}
	// Unanchored: the pattern may start anywhere. Jump to where its first
	// literal byte occurs.
	first := r.pattern[0]
	for i := 0; i < len(u); i++ {
		if first != '*' && first != '^' {
			j := strings.IndexByte(u[i:], first)
			if j < 0 {
				return false
			}
			i += j
		}
		if match(r.pattern, u[i:], r.endAnch) {
			return true
		}
	}
	return false
}

// match reports whether pattern matches a prefix of s (all of s when end is
// set). In the pattern '*' stands for any run of bytes and '^' for one
// separator byte or the end of s.
func match(pattern, s string, end bool) bool {
	for len(pattern) > 0 {
		switch c := pattern[0]; c {
		case '*':
			pattern = strings.TrimLeft(pattern, "*")
			if pattern == "" {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if match(pattern, s[i:], end) {
					return true
				}
			}
			return false
		case '^':
			pattern = pattern[1:]
			if s == "" {
				continue
			}
			if !separator(s[0]) {
				return false
			}
			s = s[1:]
		default:
			if s == "" || s[0] != c {
				return false
			}
			pattern, s = pattern[1:], s[1:]
		}
	}
	return !end || s == ""
}

// separator reports whether c is a separator in the sense of '^': anything
// but a letter, a digit and _ - . %.
func separator(c byte) bool {
	return !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '-' || c == '.' || c == '%' || c >= 0x80)
}

// splitURL finds the host of an absolute http(s) or ws(s) URL, lower-cased
// and without port or user, and the byte offsets where it starts and ends.
func splitURL(u string) (host string, start, end int, ok bool) {
	i := strings.Index(u, "://")
	if i <= 0 {
		return "", 0, 0, false
	}
	switch lowerASCII(u[:i]) {
	case "http", "https", "ws", "wss":
	default:
		return "", 0, 0, false
	}
	start = i + 3
	end = len(u)
	if j := strings.IndexAny(u[start:], "/?#"); j >= 0 {
		end = start + j
	}
	if at := strings.LastIndexByte(u[start:end], '@'); at >= 0 {
		start += at + 1
	}
	if start < end && u[start] == '[' {
		j := strings.IndexByte(u[start:end], ']')
		if j < 0 {
			return "", 0, 0, false
		}
		end = start + j + 1
	} else if j := strings.LastIndexByte(u[start:end], ':'); j >= 0 {
		end = start + j
	}
	host = strings.TrimSuffix(lowerASCII(u[start:end]), ".")
	if host == "" {
		return "", 0, 0, false
	}
	return host, start, end, true
}

// lowerASCII lower-cases ASCII letters only, so byte offsets stay valid;
// it returns s itself when s has no upper-case letter.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// BlockPatterns returns the host-anchored network rules as URL patterns in
// the syntax of the URLPattern API, for the DevTools command
// Network.setBlockedURLs (each as a BlockPattern with block set), for
// example "*://{*.}?cookielaw.org:*/*". A pattern blocks the host and its
// subdomains. Rules that patterns cannot express exactly (unanchored
// substrings, '^' inside a path, a query, an exception that overlaps) are
// left out, so BlockPatterns may block less than BlockURL, never more.
func BlockPatterns() []string {
	rs := rules()
	if rs == nil {
		return nil
	}
	return rs.patterns()
}

func (rs *ruleset) patterns() []string {
	var out []string
	for _, host := range sortedKeys(rs.blockHost) {
		if rs.allowed(host) {
			continue
		}
		for _, r := range rs.blockHost[host] {
			if p, ok := urlPattern(host, r); ok {
				out = append(out, p)
			}
		}
	}
	return out
}

// allowed reports whether an exception could apply to host or a subdomain.
func (rs *ruleset) allowed(host string) bool {
	if len(rs.allowAny) > 0 {
		return true
	}
	for h := range rs.allowHost {
		if domainMatch(h, host) || domainMatch(host, h) {
			return true
		}
	}
	return false
}

// urlPattern turns a rule indexed under host into a URLPattern string.
func urlPattern(host string, r netRule) (string, bool) {
	path := r.pattern
	switch {
	case path == "^":
		path = "/*"
	case strings.HasPrefix(path, "/"):
		if !r.endAnch {
			path += "*"
		}
	default:
		return "", false // ":port" or "^" before more of the path
	}
	if strings.ContainsAny(path[1:], "^?#") || strings.ContainsAny(host, "*") {
		return "", false
	}
	var b strings.Builder
	b.WriteString("*://{*.}?")
	b.WriteString(host)
	b.WriteString(":*")
	for i := 0; i < len(path); i++ {
		// Escape URLPattern syntax; '*' keeps its meaning of "anything".
		if strings.IndexByte(`:(){}+\`, path[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(path[i])
	}
	return b.String(), true
}
