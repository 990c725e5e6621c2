package baseline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/pictorhq/pictor/bench/load"
)

// EnsureTool returns the path of command, installing the first Debian
// package of pkgs that installs (apt-get update once, if an install
// fails) when it is missing.
func EnsureTool(ctx context.Context, progress *load.Progress, command string, pkgs ...string) (string, error) {
	if p, err := lookTool(command); err == nil {
		return p, nil
	}
	if os.Geteuid() != 0 {
		return "", fmt.Errorf("%s is missing; install it: apt-get install -y %s", command, pkgs[0])
	}
	var errs []error
	for updated := false; ; updated = true {
		for _, pkg := range pkgs {
			progress.Notef("%s is missing: apt-get install -y %s", command, pkg)
			err := apt(ctx, "install", "-y", "-q", "--no-install-recommends", pkg)
			if err == nil {
				if p, err := lookTool(command); err == nil {
					return p, nil
				}
				err = fmt.Errorf("%s installed but %s still missing", pkg, command)
			}
			errs = append(errs, err)
		}
		if updated {
			return "", fmt.Errorf("install %s: %w", command, errors.Join(errs...))
		}
		progress.Notef("apt-get update")
		if err := apt(ctx, "update", "-q"); err != nil {
			return "", fmt.Errorf("install %s: %w", command, errors.Join(append(errs, err)...))
		}
	}
}

// lookTool finds command in PATH or in the sbin directories a non-login
// root shell may lack.
func lookTool(command string) (string, error) {
	if p, err := exec.LookPath(command); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		p := filepath.Join(dir, command)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// apt runs apt-get non-interactively.
func apt(ctx context.Context, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "apt-get", args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	var out tailBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("apt-get %s: %w: %s", strings.Join(args, " "), err, out.lastLine())
	}
	return nil
}

// Version runs a tool's version command briefly and returns the first
// line it writes on standard output or error (nginx -v writes on the
// latter).
func Version(ctx context.Context, name string, args ...string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, name, args...).CombinedOutput()
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(line)
}
