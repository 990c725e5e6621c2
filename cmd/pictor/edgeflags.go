package main

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// urlList is a flag that may be repeated, each value a URL or several
// separated by commas (as its PICTOR_* variable holds them): the edge's
// --origin-url.
type urlList []string

func (l *urlList) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ",")
}

func (l *urlList) Set(v string) error {
	for u := range strings.SplitSeq(v, ",") {
		u = strings.TrimSpace(u)
		if u == "" {
			return errors.New("empty URL in the list")
		}
		*l = append(*l, u)
	}
	return nil
}

// prefixList is a flag of networks, repeated or separated by commas, each
// a CIDR prefix or a single address: the edge's --trusted-proxies.
type prefixList []netip.Prefix

func (l *prefixList) String() string {
	if l == nil {
		return ""
	}
	out := make([]string, len(*l))
	for i, p := range *l {
		out[i] = p.String()
	}
	return strings.Join(out, ",")
}

func (l *prefixList) Set(v string) error {
	for s := range strings.SplitSeq(v, ",") {
		s = strings.TrimSpace(s)
		if p, err := netip.ParsePrefix(s); err == nil {
			*l = append(*l, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return fmt.Errorf("%q is neither a network (CIDR) nor an address", s)
		}
		a = a.Unmap()
		*l = append(*l, netip.PrefixFrom(a, a.BitLen()))
	}
	return nil
}
