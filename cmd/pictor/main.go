package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/pictorhq/pictor/origin/contract/malloc"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `Pictor turns HTML/CSS, templates or a URL into images and PDFs.

Usage:
  pictor serve  [--data-dir DIR] [--addr HOST:PORT] [--origin-addr HOST:PORT] [--public-url URL] [--allow-private-urls]
  pictor edge   --origin-url URL[,URL...] [--addr HOST:PORT] [--cache-dir DIR] [--cache-mem BYTES] [--public-url URL]
  pictor origin [--data-dir DIR] [--addr HOST:PORT] [--public-url URL] [--allow-private-urls]
  pictor admin org create   --data-dir DIR --name NAME --plan PLAN
  pictor admin org list     --data-dir DIR
  pictor admin org set-plan --data-dir DIR --org ORG_ID --plan PLAN
  pictor admin org suspend  --data-dir DIR --org ORG_ID
  pictor admin org resume   --data-dir DIR --org ORG_ID
  pictor admin key create   --data-dir DIR --org ORG_ID [--name NAME]
  pictor admin backup       --data-dir DIR --out FILE
  pictor admin restore      --data-dir NEW_DIR --from FILE
  pictor admin reseal       --data-dir DIR
  pictor version

Admin commands print JSON on stdout. They use the store directly, or the running
server's admin endpoint when a server holds --data-dir (plans: free, basic, pro, scale).
org, key: with --store postgres://... (and PICTOR_MASTER_KEY) they work on a shared store.
key create prints a new owner key (every permission) once: the way back in when keys are lost.
backup writes one archive (mode 0600: it holds the master key) of the embedded store, the
images and the secrets, consistent while serve runs; restore unpacks it, after checking it,
into an empty or new directory. With --store or --blobs s3://, back up PostgreSQL, the
bucket and the master key together instead.

Every flag also reads PICTOR_<FLAG> (upper case, '-' as '_'); a flag beats its variable.
`

// env is what run needs from the process.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

func main() {
	// Before anything allocates C memory (pebble, libvips).
	malloc.Tune()
	// A process with an edge runs more Go processors than CPUs (procs.go).
	if len(os.Args) > 1 {
		if n, ok := edgeProcs(os.Args[1], os.Getenv); ok {
			runtime.GOMAXPROCS(n)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := run(ctx, os.Args[1:], env{stdout: os.Stdout, stderr: os.Stderr, getenv: osGetenv})
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "pictor:", err)
		}
		os.Exit(2)
	}
}

func run(ctx context.Context, args []string, e env) error {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usage)
		return errors.New("missing command")
	}
	switch args[0] {
	case "serve":
		return runServe(ctx, args[1:], e)
	case "edge":
		return runEdge(ctx, args[1:], e)
	case "origin":
		return runOrigin(ctx, args[1:], e)
	case "admin":
		return runAdmin(ctx, args[1:], e)
	case "version", "--version", "-v":
		fmt.Fprintln(e.stdout, "pictor", version)
		return nil
	case "help", "--help", "-h":
		fmt.Fprint(e.stdout, usage)
		return nil
	}
	fmt.Fprint(e.stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}

// setupLogging installs the JSON logger on stderr.
func setupLogging(e env, level string) error {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return fmt.Errorf("--log-level %q: %w", level, err)
	}
	slog.SetDefault(newLogger(e.stderr, l))
	return nil
}
