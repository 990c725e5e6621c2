package pictor

import (
	"context"
	"os/exec"
	"strings"
	"time"
)

// ServeHasFlag reports whether `binary serve` accepts --name, from its
// usage text: the harness can then drive binaries older than a flag.
func ServeHasFlag(ctx context.Context, binary, name string) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, binary, "serve", "-h").CombinedOutput()
	return strings.Contains(string(out), "-"+name+" ")
}

// ServeFlags returns the names of the flags `binary serve` accepts, from
// its usage text; none when it does not run.
func ServeFlags(ctx context.Context, binary string) map[string]bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, binary, "serve", "-h").CombinedOutput()
	return usageFlags(string(out))
}

// usageFlags reads the flag names of a Go flag set's usage text, where a
// flag's line starts with two spaces and -name, followed by its type, by
// a tab and its usage (a one-letter name), or by nothing (a boolean: the
// case ServeHasFlag, which looks for "-name ", misses).
func usageFlags(usage string) map[string]bool {
	names := map[string]bool{}
	for line := range strings.Lines(usage) {
		if rest, ok := strings.CutPrefix(line, "  -"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				names[f[0]] = true
			}
		}
	}
	return names
}
