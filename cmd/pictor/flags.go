package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pictorhq/pictor/edge"
)

// flagSet is a flag.FlagSet whose flags also read PICTOR_* environment
// variables: PICTOR_ + the flag name in upper case with '-' as '_'.
// A flag given on the command line beats its variable.
type flagSet struct {
	*flag.FlagSet
	getenv func(string) string
}

func newFlagSet(name string, stderr io.Writer, getenv func(string) string) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return &flagSet{FlagSet: fs, getenv: getenv}
}

// envName returns the environment variable of a flag.
func envName(flagName string) string {
	return "PICTOR_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parse parses args, then fills every flag not given from its variable.
func (fs *flagSet) parse(args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || err != nil {
			return
		}
		if v := fs.getenv(envName(f.Name)); v != "" {
			if serr := f.Value.Set(v); serr != nil {
				err = fmt.Errorf("%s=%q: %w", envName(f.Name), v, serr)
			}
		}
	})
	return err
}

// require reports a missing mandatory flag.
func (fs *flagSet) require(names ...string) error {
	for _, n := range names {
		if fs.Lookup(n).Value.String() == "" {
			return fmt.Errorf("--%s is required (or set %s)", n, envName(n))
		}
	}
	return nil
}

func osGetenv(k string) string { return os.Getenv(k) }

// registerEdgeLimits registers the edge's connection and slow-client
// limits, which serve and edge share, on cfg.
func registerEdgeLimits(fs *flagSet, cfg *edge.Config) {
	def := edge.DefaultConfig()
	fs.IntVar(&cfg.MaxConns, "max-conns", def.MaxConns,
		"client connections the edge holds at once; one more is answered 503 and closed")
	fs.IntVar(&cfg.MaxConnsPerIP, "max-conns-per-ip", def.MaxConnsPerIP,
		"client connections from one address; one more is answered 429 and closed (0: no limit)")
	fs.DurationVar(&cfg.HeaderTimeout, "header-timeout", def.HeaderTimeout,
		"time from a request's first byte to the end of its headers; a slower client gets 408")
	fs.DurationVar(&cfg.BodyGrace, "body-grace", def.BodyGrace,
		"time a request body may take before --body-min-rate applies")
	fs.Int64Var(&cfg.BodyMinRate, "body-min-rate", def.BodyMinRate,
		"bytes per second a request body must average after --body-grace; a slower client gets 408")
	fs.Var((*prefixList)(&cfg.TrustedProxies), "trusted-proxies",
		"`networks` (CIDR or addresses, comma-separated) of the load balancers in front of the edge: their X-Forwarded-For names the client, "+
			"which the per-client limits of OG pages and OAuth registrations count by (default none: the peer is the client)")
}
