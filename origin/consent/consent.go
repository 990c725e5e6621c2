package consent

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

var (
	// EasyList Cookie, as compiled by @duckduckgo/autoconsent (NOTICE).
	//go:embed easylist-cookie.txt.gz
	easylistCookie []byte
	// Pictor's own rules for consent platforms.
	//go:embed pictor.txt
	pictorRules string
	//go:embed script.js
	script string
)

var (
	compileOnce sync.Once
	compiled    *ruleset
)

// rules compiles the embedded lists on first use. It returns nil, and every
// function of the package then blocks nothing, only if an embedded list is
// unreadable, which the tests rule out.
func rules() *ruleset {
	compileOnce.Do(func() {
		rs, err := compileEmbedded()
		if err != nil {
			slog.Error("consent rules unreadable", "err", err)
			return
		}
		compiled = rs
		slog.Debug("consent rules compiled", "network", rs.stats.Network, "generic", len(rs.generic),
			"specific", rs.stats.Specific, "exceptions", rs.stats.Exceptions, "skipped", rs.stats.Skipped)
	})
	return compiled
}

func compileEmbedded() (*ruleset, error) {
	zr, err := gzip.NewReader(bytes.NewReader(easylistCookie))
	if err != nil {
		return nil, fmt.Errorf("read easylist-cookie.txt.gz: %w", err)
	}
	defer zr.Close()
	rs, err := compile(zr, strings.NewReader(pictorRules))
	if err != nil {
		return nil, fmt.Errorf("compile consent rules: %w", err)
	}
	return rs, nil
}

// Script returns a JavaScript expression to evaluate in a loaded page after
// injecting CSS. It hides visible fixed or sticky overlays that look like
// consent banners (by the names of consent tools in ids and classes, by what
// they say and what their buttons say) and the empty backdrops behind them.
// When it hid something, or the stylesheet of CSS did, it restores the
// scrolling that banners lock (overflow on html and body, a fixed body). It
// evaluates to {hidden: number, marked: boolean, unlocked: boolean}.
func Script() string { return script }
