package main

import (
	"errors"
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
