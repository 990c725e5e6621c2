package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// snippets returns the fenced code blocks whose info string is lang in the
// section of the Markdown file (relative to the repository's root) under
// the heading that reads exactly heading ("## Quick start"), up to the next
// heading of the same or a higher level. It fails the test when the section
// holds none, so that a renamed heading cannot turn a docs test into a
// test of nothing.
func snippets(t *testing.T, file, heading, lang string) []string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("..", "..", file))
	if err != nil {
		t.Fatal(err)
	}
	level := strings.IndexByte(heading, ' ')
	var (
		blocks  []string
		in      bool // inside the section
		fence   bool // inside a fenced block
		keep    bool // the fenced block is one of lang
		current strings.Builder
	)
	for _, line := range strings.Split(string(text), "\n") {
		switch {
		case fence && strings.HasPrefix(line, "```"):
			fence = false
			if keep {
				blocks = append(blocks, current.String())
			}
		case fence:
			if keep {
				current.WriteString(line + "\n")
			}
		case strings.HasPrefix(line, "```") && in:
			fence, keep = true, strings.TrimSpace(strings.TrimPrefix(line, "```")) == lang
			current.Reset()
		case strings.HasPrefix(line, "#"):
			l := strings.IndexByte(line, ' ')
			if line == heading {
				in = true
			} else if in && l > 0 && l <= level && strings.Trim(line[:l], "#") == "" {
				in = false
			}
		}
	}
	if len(blocks) == 0 {
		t.Fatalf("%s has no %q blocks under %q", file, lang, heading)
	}
	return blocks
}

// runScript runs a shell script with bash (-euo pipefail) in dir with only
// the environment given (and PATH, HOME), and returns its stdout.
func runScript(t *testing.T, dir, script string, environ map[string]string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	for k, v := range environ {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("script failed: %v\nstderr:\n%s\nstdout:\n%s\nscript:\n%s", err, stderr.String(), stdout.String(), script)
	}
	return stdout.String()
}
