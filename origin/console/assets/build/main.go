// Command build bundles the console's script and stylesheet
// (origin/console/web/src) into origin/console/assets/dist with
// content-hashed names and a manifest, removing outputs of earlier
// sources. With -check it builds in memory and exits non-zero naming
// each committed file that is not what the sources build.
//
//	go run ./origin/console/assets/build [-check] [-web DIR] [-dist DIR]
//
// Paths default to the repository's, found from the working directory.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"

	"github.com/pictorhq/pictor/origin/console/assets/internal/bundle"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "console assets:", err)
		os.Exit(1)
	}
}

func run(_ context.Context, args []string, out io.Writer) error {
	fset := flag.NewFlagSet("build", flag.ContinueOnError)
	check := fset.Bool("check", false, "compare the committed outputs with a fresh build; write nothing")
	webDir := fset.String("web", "", "the console's npm project (default: origin/console/web of the repository)")
	distDir := fset.String("dist", "", "the output directory (default: origin/console/assets/dist of the repository)")
	if err := fset.Parse(args); err != nil {
		return err
	}
	if *webDir == "" || *distDir == "" {
		root, err := repoRoot()
		if err != nil {
			return err
		}
		if *webDir == "" {
			*webDir = filepath.Join(root, bundle.DefaultConfig().WebDir)
		}
		if *distDir == "" {
			*distDir = filepath.Join(root, "origin", "console", "assets", "dist")
		}
	}
	files, err := bundle.Build(bundle.Config{WebDir: *webDir})
	if err != nil {
		return err
	}
	if *check {
		if err := bundle.Check(*distDir, files); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s is what the sources build\n", *distDir)
		return nil
	}
	if err := bundle.Write(*distDir, files); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintf(out, "%s\t%d bytes\n", filepath.Join(*distDir, name), len(files[name]))
	}
	return nil
}

// repoRoot is the nearest directory at or above the working directory
// holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod at or above the working directory: run from the repository")
		}
		dir = parent
	}
}
