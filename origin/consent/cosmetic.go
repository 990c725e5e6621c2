package consent

import (
	"maps"
	"slices"
	"strings"
)

// MaxCSS bounds the stylesheet CSS returns, in bytes. Rules for the host
// come first; generic rules are cut at a group boundary when they would
// pass the bound (the pinned lists give about 330 KB in all).
const MaxCSS = 512 << 10

// groupSize is the number of selectors in one style rule. Chromium drops a
// whole rule for one selector it cannot parse, so groups stay small.
const groupSize = 64

// hideDecl is the body of every hiding rule. The custom property marks what
// the rules hid, so that Script can tell a consent tool was on the page
// although it is no longer visible (custom properties inherit, and a
// display:none element still has a computed style).
const hideDecl = "{display:none!important;" + markerProperty + ":1}\n"

// markerProperty is the custom property of hideDecl; script.js reads it.
const markerProperty = "--pictor-consent"

// CSS returns one stylesheet that hides the consent banners of the rule set
// on a page of host (a host name such as "www.example.com"; a port is
// ignored): the host's own rules, then the generic ones, less the
// exceptions for host, at most MaxCSS bytes. An empty host gets the generic
// rules. Inject it into the page (a <style> element); Script then restores
// what the hidden banners locked.
func CSS(host string) string {
	rs := rules()
	if rs == nil {
		return ""
	}
	return rs.css(normalizeHost(host))
}

func normalizeHost(h string) string {
	h = strings.TrimSpace(lowerASCII(h))
	if strings.HasPrefix(h, "[") {
		if i := strings.IndexByte(h, ']'); i >= 0 {
			return h[:i+1]
		}
	} else if i := strings.LastIndexByte(h, ':'); i >= 0 {
		h = h[:i]
	}
	return strings.TrimSuffix(h, ".")
}

func (rs *ruleset) css(host string) string {
	if rs.noCosmetic.any(host) {
		return ""
	}
	// Selectors host's exceptions cancel.
	except := map[string]bool{}
	rs.exceptions.lookup(host, func(r *cosRule) {
		if r.appliesTo(host) {
			except[r.selector] = true
		}
	})

	var b strings.Builder
	var hide []string
	seen := map[string]bool{}
	rs.specific.lookup(host, func(r *cosRule) {
		if seen[r.selector+"\x00"+r.style] || except[r.selector] || !r.appliesTo(host) {
			return
		}
		seen[r.selector+"\x00"+r.style] = true
		if r.style != "" {
			b.WriteString(r.selector + "{" + r.style + "}\n")
		} else {
			hide = append(hide, r.selector)
		}
	})
	writeGroups(&b, hide, MaxCSS)
	if rs.noGeneric.any(host) {
		return b.String()
	}

	// The generic part is the same for nearly every host: render it once.
	generic := rs.genericCSS()
	custom := false
	for sel := range except {
		custom = custom || rs.genericSet[sel]
	}
	for _, rules := range rs.genericOnly {
		for _, r := range rules {
			custom = custom || !r.appliesTo(host)
		}
	}
	if custom {
		sels := make([]string, 0, len(rs.generic))
		for _, sel := range rs.generic {
			if except[sel] || rs.excludedGeneric(sel, host) {
				continue
			}
			sels = append(sels, sel)
		}
		var g strings.Builder
		writeGroups(&g, sels, MaxCSS-b.Len())
		generic = g.String()
	}
	if b.Len() == 0 && !custom {
		return generic // most hosts: no rules of their own, no copy
	}
	if room := MaxCSS - b.Len(); len(generic) > room {
		generic = generic[:strings.LastIndexByte(generic[:max(room, 0)], '\n')+1]
	}
	b.WriteString(generic)
	return b.String()
}

// excludedGeneric reports whether every generic rule for sel excludes host.
func (rs *ruleset) excludedGeneric(sel, host string) bool {
	rules, ok := rs.genericOnly[sel]
	if !ok {
		return false
	}
	for _, r := range rules {
		if r.appliesTo(host) {
			return false
		}
	}
	return true
}

func (rs *ruleset) genericCSS() string {
	rs.genericOnce.Do(func() {
		var b strings.Builder
		writeGroups(&b, rs.generic, MaxCSS)
		rs.genericText = b.String()
	})
	return rs.genericText
}

// writeGroups writes hiding rules for sels, groupSize selectors a rule,
// while b stays within limit bytes.
func writeGroups(b *strings.Builder, sels []string, limit int) {
	var g strings.Builder
	for len(sels) > 0 {
		n := min(groupSize, len(sels))
		g.Reset()
		g.WriteString(strings.Join(sels[:n], ","))
		g.WriteString(hideDecl)
		if b.Len()+g.Len() > limit {
			return
		}
		b.WriteString(g.String())
		sels = sels[n:]
	}
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
