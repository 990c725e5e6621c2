package consent

import (
	"bufio"
	"io"
	"strings"
	"sync"
)

// This file parses filter lists in the syntax of Adblock Plus and EasyList
// (https://help.adblockplus.org/hc/en-us/articles/360062733293) into a
// ruleset. It keeps what a renderer can apply without knowing the page that
// made a request: element hiding (##, #@#), uBlock Origin's :style() and
// :remove(), network rules and their exceptions, and the $elemhide and
// $generichide exceptions. Everything else (scriptlets, procedural
// selectors, HTML filters, regular expressions, $domain= network rules) is
// counted and skipped.

// ruleset is a compiled rule list.
type ruleset struct {
	// Network rules. Those anchored to a host (||host^, ||host/path) are
	// indexed by that host; the rest are scanned.
	blockHost map[string][]netRule
	blockAny  []netRule
	allowHost map[string][]netRule
	allowAny  []netRule

	// Cosmetic rules.
	generic      []string              // generic hiding selectors, in list order
	genericSet   map[string]bool       // the selectors of generic, for lookups
	genericOnly  map[string][]*cosRule // generic selectors whose every rule excludes hosts (~host##sel)
	genericPlain map[string]bool       // generic selectors with a rule that excludes nothing
	specific     domainIndex           // hiding and style rules for some hosts
	exceptions   domainIndex           // host#@#sel
	noCosmetic   domainIndex           // @@||host^$elemhide or $document
	noGeneric    domainIndex           // @@||host^$generichide

	genericOnce sync.Once
	genericText string // the generic rules as CSS, made on first use

	stats stats
}

// stats counts what a compilation kept and skipped.
type stats struct {
	Network, NetworkExceptions, Generic, Specific, Exceptions, Skipped int
}

// cosRule is one element-hiding or style rule.
type cosRule struct {
	selector string
	style    string   // declarations of a :style() rule; "" hides the element
	include  []string // hosts (or entities such as "sony.*") the rule is for
	exclude  []string // ~hosts
}

// appliesTo reports whether r is for host.
func (r *cosRule) appliesTo(host string) bool {
	for _, d := range r.exclude {
		if domainMatch(host, d) {
			return false
		}
	}
	if len(r.include) == 0 {
		return true
	}
	for _, d := range r.include {
		if domainMatch(host, d) {
			return true
		}
	}
	return false
}

// domainIndex finds the rules for a host by its own name, its parents'
// names and entity names ("google.*" is google.com, google.co.uk, ...).
type domainIndex struct {
	byDomain map[string][]*cosRule
	byEntity map[string][]*cosRule // keyed by the name before ".*"
}

func (ix *domainIndex) add(r *cosRule, domains []string) {
	for _, d := range domains {
		if name, ok := strings.CutSuffix(d, ".*"); ok {
			if ix.byEntity == nil {
				ix.byEntity = map[string][]*cosRule{}
			}
			ix.byEntity[name] = append(ix.byEntity[name], r)
			continue
		}
		if ix.byDomain == nil {
			ix.byDomain = map[string][]*cosRule{}
		}
		ix.byDomain[d] = append(ix.byDomain[d], r)
	}
}

// lookup calls f with each rule indexed under a name that host matches. A
// rule can come more than once; f checks appliesTo itself.
func (ix *domainIndex) lookup(host string, f func(*cosRule)) {
	if host == "" {
		return
	}
	for s := host; ; {
		for _, r := range ix.byDomain[s] {
			f(r)
		}
		i := strings.IndexByte(s, '.')
		if i < 0 {
			break
		}
		s = s[i+1:]
	}
	if len(ix.byEntity) == 0 {
		return
	}
	// An entity name ends one or two labels before the end of host.
	for start := 0; start < len(host); {
		rest := host[start:]
		for end := 0; end < len(rest); end++ {
			if rest[end] == '.' && labels(rest[end+1:]) <= 2 {
				for _, r := range ix.byEntity[rest[:end]] {
					f(r)
				}
			}
		}
		i := strings.IndexByte(rest, '.')
		if i < 0 {
			break
		}
		start += i + 1
	}
}

// any reports whether some rule of ix applies to host.
func (ix *domainIndex) any(host string) bool {
	found := false
	ix.lookup(host, func(r *cosRule) { found = found || r.appliesTo(host) })
	return found
}

func labels(s string) int { return strings.Count(s, ".") + 1 }

// domainMatch reports whether host is d or under d; d may be an entity
// ("example.*"), which stands for example under any suffix of one or two
// labels (example.com, example.co.uk).
func domainMatch(host, d string) bool {
	if name, ok := strings.CutSuffix(d, ".*"); ok {
		for start := 0; start < len(host); {
			rest := host[start:]
			if tail, ok := strings.CutPrefix(rest, name+"."); ok && tail != "" && labels(tail) <= 2 {
				return true
			}
			i := strings.IndexByte(rest, '.')
			if i < 0 {
				return false
			}
			start += i + 1
		}
		return false
	}
	return host == d || (len(host) > len(d) && strings.HasSuffix(host, d) && host[len(host)-len(d)-1] == '.')
}

// netRule is one network rule. For a rule indexed by host, pattern is what
// must follow the host in the URL; otherwise it is matched as the rule says.
type netRule struct {
	pattern    string
	hostAnchor bool // "||": pattern starts at the start of the host or of one of its labels
	startAnch  bool // "|" at the start
	endAnch    bool // "|" at the end
	matchCase  bool
}

// compile parses lists, in order, into one ruleset.
func compile(lists ...io.Reader) (*ruleset, error) {
	rs := &ruleset{
		blockHost:    map[string][]netRule{},
		allowHost:    map[string][]netRule{},
		genericSet:   map[string]bool{},
		genericOnly:  map[string][]*cosRule{},
		genericPlain: map[string]bool{},
	}
	var genericExceptions []string
	for _, list := range lists {
		sc := bufio.NewScanner(list)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" || line[0] == '!' || line[0] == '[' {
				continue
			}
			if sep, i := cosmeticSeparator(line); i >= 0 {
				exc, ok := rs.addCosmetic(line[:i], sep, line[i+len(sep):])
				if !ok {
					rs.stats.Skipped++
				} else if exc != "" {
					genericExceptions = append(genericExceptions, exc)
				}
				continue
			}
			if !rs.addNetwork(line) {
				rs.stats.Skipped++
			}
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	// A generic exception (#@#sel) cancels that selector everywhere.
	for _, sel := range genericExceptions {
		delete(rs.genericSet, sel)
		delete(rs.genericOnly, sel)
	}
	kept := rs.generic[:0]
	for _, sel := range rs.generic {
		if rs.genericSet[sel] {
			kept = append(kept, sel)
		}
	}
	rs.generic = kept
	rs.genericPlain = nil
	return rs, nil
}

// cosmeticSeparator finds the separator of an element-hiding line. Host
// lists hold no '#', so the first '#' that starts a separator is it.
func cosmeticSeparator(line string) (string, int) {
	for i := strings.IndexByte(line, '#'); i >= 0 && i < len(line)-1; {
		for _, sep := range []string{"##", "#@#", "#?#", "#@?#", "#$#", "#@$#", "#%#", "#@%#", "#$?#", "#@$?#"} {
			if strings.HasPrefix(line[i:], sep) {
				return sep, i
			}
		}
		j := strings.IndexByte(line[i+1:], '#')
		if j < 0 {
			break
		}
		i += j + 1
	}
	return "", -1
}

// addCosmetic adds one element-hiding rule. For a generic exception it
// returns the selector, which compile removes once every list is read.
func (rs *ruleset) addCosmetic(domains, sep, body string) (genericException string, ok bool) {
	if sep != "##" && sep != "#@#" {
		return "", false // procedural (#?#), CSS injection (#$#), scriptlets (#%#)
	}
	sel, style, ok := parseSelector(body)
	if !ok {
		return "", false
	}
	r := &cosRule{selector: sel, style: style}
	for _, d := range strings.Split(domains, ",") {
		d = strings.ToLower(strings.TrimSpace(d))
		switch {
		case d == "":
		case d[0] == '~' && validDomain(d[1:]):
			r.exclude = append(r.exclude, d[1:])
		case validDomain(d):
			r.include = append(r.include, d)
		default:
			return "", false
		}
	}
	if sep == "#@#" {
		if style != "" {
			return "", false
		}
		if len(r.include) == 0 && len(r.exclude) == 0 {
			return sel, true
		}
		if len(r.include) == 0 {
			return "", false // "~a.com#@#sel" is not a rule anyone writes
		}
		rs.exceptions.add(r, r.include)
		rs.stats.Exceptions++
		return "", true
	}
	switch {
	case len(r.include) > 0:
		rs.specific.add(r, r.include)
		rs.stats.Specific++
	case style != "":
		return "", false // a generic style rule would restyle every page
	default:
		if !rs.genericSet[sel] {
			rs.genericSet[sel] = true
			rs.generic = append(rs.generic, sel)
		}
		// Track exclusions while every rule for sel has some; one rule
		// without any makes sel apply everywhere.
		if len(r.exclude) > 0 && !rs.genericPlain[sel] {
			rs.genericOnly[sel] = append(rs.genericOnly[sel], r)
		} else if len(r.exclude) == 0 {
			rs.genericPlain[sel] = true
			delete(rs.genericOnly, sel)
		}
		rs.stats.Generic++
	}
	return "", true
}

// procedural lists the extended pseudo-classes of uBlock Origin, AdGuard
// and Adblock Plus that are no CSS; a rule that uses one is skipped.
var procedural = []string{
	":has-text(", ":-abp-", ":upward(", ":xpath(", ":matches-css", ":min-text-length(",
	":watch-attr(", ":others(", ":if(", ":if-not(", ":nth-ancestor(", ":contains(",
	":matches-attr(", ":matches-path(", ":matches-prop(", ":matches-media(",
	":remove-attr(", ":remove-class(", ":shadow(", ":spath(", ":-ext-", ":style(", ":remove(",
}

// parseSelector splits a rule body into a CSS selector and, for :style(),
// its declarations. It rejects what could break out of a style rule.
func parseSelector(body string) (sel, style string, ok bool) {
	sel = strings.TrimSpace(body)
	if sel == "" || strings.HasPrefix(sel, "+js(") || strings.HasPrefix(sel, "^") {
		return "", "", false
	}
	switch {
	case strings.HasSuffix(sel, ":remove()"):
		sel = strings.TrimSpace(strings.TrimSuffix(sel, ":remove()"))
	case strings.HasSuffix(sel, ")") && strings.Contains(sel, ":style("):
		i := strings.LastIndex(sel, ":style(")
		style = strings.TrimSpace(sel[i+len(":style(") : len(sel)-1])
		sel = strings.TrimSpace(sel[:i])
		if style == "" || !safeCSS(style) || strings.Contains(strings.ToLower(style), "url(") {
			return "", "", false
		}
	}
	for _, p := range procedural {
		if strings.Contains(sel, p) {
			return "", "", false
		}
	}
	if sel == "" || !safeCSS(sel) || strings.ContainsAny(sel, "{};") && !quotedOnly(sel, "{};") {
		return "", "", false
	}
	return sel, style, true
}

// safeCSS reports whether s has balanced brackets and quotes, no braces
// outside quotes, no comment and no markup, so that it cannot end the style
// rule or the style element it is put in. A backslash escapes the next
// byte, as in CSS (".md\\:flex").
func safeCSS(s string) bool {
	if strings.Contains(s, "/*") || strings.Contains(s, "<") {
		return false
	}
	var stack []byte
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' {
			if i+1 >= len(s) || s[i+1] == '\n' {
				return false
			}
			i++
			continue
		}
		if quote != 0 {
			if c == quote {
				quote = 0
			}
			continue
		}
		switch c {
		case '"', '\'':
			quote = c
		case '(', '[':
			stack = append(stack, c)
		case ')', ']':
			open := byte('(')
			if c == ']' {
				open = '['
			}
			if len(stack) == 0 || stack[len(stack)-1] != open {
				return false
			}
			stack = stack[:len(stack)-1]
		case '{', '}':
			return false
		}
	}
	return quote == 0 && len(stack) == 0
}

// quotedOnly reports whether every byte of chars in s is inside quotes.
func quotedOnly(s, chars string) bool {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			i++
		case quote != 0 && c == quote:
			quote = 0
		case quote == 0 && (c == '"' || c == '\''):
			quote = c
		case quote == 0 && strings.IndexByte(chars, c) >= 0:
			return false
		}
	}
	return true
}

// validDomain accepts host names and entities in lower case.
func validDomain(d string) bool {
	d = strings.TrimSuffix(d, ".*")
	if d == "" || len(d) > 253 || d[0] == '.' || d[len(d)-1] == '.' {
		return false
	}
	for i := 0; i < len(d); i++ {
		c := d[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

// addNetwork adds one network rule; it returns false for a rule it skips.
func (rs *ruleset) addNetwork(line string) bool {
	allow := false
	if rest, ok := strings.CutPrefix(line, "@@"); ok {
		allow, line = true, rest
	}
	r := netRule{}
	var elemhide, generichide bool
	if i := strings.LastIndexByte(line, '$'); i >= 0 {
		for _, opt := range strings.Split(line[i+1:], ",") {
			switch o := strings.ToLower(strings.TrimSpace(opt)); strings.TrimPrefix(o, "~") {
			case "third-party", "3p":
				if o[0] == '~' {
					return false // first-party only: needs the page, which BlockURL has not
				}
			case "first-party", "1p", "strict1p", "strict3p":
				return false
			case "match-case":
				r.matchCase = true
			case "important", "all":
			case "script", "image", "stylesheet", "css", "object", "xmlhttprequest", "xhr",
				"subdocument", "frame", "ping", "websocket", "font", "media", "other", "popup":
				// BlockURL does not know a request's type; the rule applies to all.
			case "document", "doc", "elemhide", "ehide":
				elemhide = true
			case "generichide", "ghide":
				generichide = true
			default:
				return false // domain=, redirect=, csp=, removeparam= and the rest
			}
		}
		line = line[:i]
	}
	if elemhide || generichide {
		// Only exceptions of the form @@||host^$elemhide mean anything here.
		host, ok := strings.CutPrefix(line, "||")
		host = strings.TrimSuffix(strings.TrimSuffix(host, "^"), "/")
		if !allow || !ok || !validDomain(host) {
			return false
		}
		r := &cosRule{include: []string{host}}
		if elemhide {
			rs.noCosmetic.add(r, r.include)
		} else {
			rs.noGeneric.add(r, r.include)
		}
		return true
	}
	if len(line) > 1 && line[0] == '/' && line[len(line)-1] == '/' {
		return false // regular expression
	}
	switch {
	case strings.HasPrefix(line, "||"):
		r.hostAnchor, line = true, line[2:]
	case strings.HasPrefix(line, "|"):
		r.startAnch, line = true, line[1:]
	}
	if strings.HasSuffix(line, "|") {
		r.endAnch, line = true, line[:len(line)-1]
	}
	// Host names are case-insensitive even in a $match-case rule.
	if hostEnd := strings.IndexAny(line, "^/:|?*"); r.hostAnchor && r.matchCase && hostEnd > 0 {
		line = strings.ToLower(line[:hostEnd]) + line[hostEnd:]
	} else if !r.matchCase {
		line = strings.ToLower(line)
	}
	if strings.Trim(line, "*^") == "" || strings.ContainsAny(line, " \t") {
		return false // would match everything
	}
	r.pattern = line
	if allow {
		rs.stats.NetworkExceptions++
	} else {
		rs.stats.Network++
	}
	// Index "||host^..." and "||host/..." under host.
	if r.hostAnchor {
		end := strings.IndexAny(line, "^/:|?*")
		if end > 0 && line[end] != '*' && validDomain(line[:end]) {
			host := line[:end]
			r.pattern = line[end:]
			if allow {
				rs.allowHost[host] = append(rs.allowHost[host], r)
			} else {
				rs.blockHost[host] = append(rs.blockHost[host], r)
			}
			return true
		}
	}
	if allow {
		rs.allowAny = append(rs.allowAny, r)
	} else {
		rs.blockAny = append(rs.blockAny, r)
	}
	return true
}
