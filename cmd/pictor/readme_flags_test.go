package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// commandFlags returns the flags of a pictor command, as its -h lists them.
func commandFlags(t *testing.T, args ...string) []string {
	t.Helper()
	var out, errOut apitest.Buffer
	err := run(context.Background(), append(args, "-h"), env{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }})
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("pictor %s -h: %v", strings.Join(args, " "), err)
	}
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(errOut.String(), -1) {
		names = append(names, m[1])
	}
	if len(names) == 0 {
		t.Fatalf("pictor %s -h listed no flags:\n%s", strings.Join(args, " "), errOut.String())
	}
	return names
}

// TestReadmeListsEveryFlag keeps the README's configuration table true,
// both ways: every flag of serve, edge and origin has a row naming that
// command under "used by", and every command a row names there has the
// flag (admin included: its rows name the flags the admin commands share
// with the servers). Each row's variable is the flag's.
func TestReadmeListsEveryFlag(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	start := strings.Index(text, "| flag | variable | default | used by | meaning |")
	if start < 0 {
		t.Fatal("README has no configuration table (| flag | variable | default | used by | meaning |)")
	}
	table := text[start:]
	if end := strings.Index(table, "\n\n"); end >= 0 {
		table = table[:end]
	}
	flagCell := regexp.MustCompile("`--([a-z0-9-]+)`")
	usedBy := map[string][]string{} // flag → commands its row names
	for _, row := range strings.Split(table, "\n")[2:] {
		cols := strings.Split(row, " | ")
		if len(cols) < 5 {
			t.Fatalf("malformed row %q", row)
		}
		names := flagCell.FindAllStringSubmatch(cols[0], -1)
		if len(names) == 0 {
			if !strings.Contains(cols[1], "PICTOR_") {
				t.Fatalf("row %q names neither a flag nor a variable", row)
			}
			continue // a variable without a flag (PICTOR_MASTER_KEY)
		}
		var cmds []string
		// "serve, origin (admin accepts it, unused)": the commands outside parentheses.
		for _, c := range strings.Split(regexp.MustCompile(`\([^)]*\)`).ReplaceAllString(cols[3], ""), ",") {
			cmds = append(cmds, strings.TrimSpace(c))
		}
		for _, n := range names {
			if _, dup := usedBy[n[1]]; dup {
				t.Errorf("--%s has two rows", n[1])
			}
			usedBy[n[1]] = cmds
			if len(names) == 1 && !strings.Contains(cols[1], envName(n[1])) {
				t.Errorf("--%s: the variable column %s does not name %s", n[1], cols[1], envName(n[1]))
			}
		}
	}
	commands := map[string][]string{
		"serve":  commandFlags(t, "serve"),
		"edge":   commandFlags(t, "edge"),
		"origin": commandFlags(t, "origin"),
		"admin":  commandFlags(t, "admin", "org", "create"),
	}
	for cmd, flags := range commands {
		for _, f := range flags {
			if cmd == "admin" {
				continue // its own flags (--name, --plan, ...) are in its usage, not the servers' table
			}
			if !slices.Contains(usedBy[f], cmd) {
				t.Errorf("pictor %s --%s: no README row names it for %s (row: %v)", cmd, f, cmd, usedBy[f])
			}
		}
	}
	for f, cmds := range usedBy {
		for _, cmd := range cmds {
			flags, ok := commands[cmd]
			if !ok {
				t.Errorf("--%s: the README row names %q, not a pictor command", f, cmd)
				continue
			}
			if !slices.Contains(flags, f) {
				t.Errorf("--%s: the README says %s takes it, but pictor %s has no such flag", f, cmd, cmd)
			}
		}
	}
}
