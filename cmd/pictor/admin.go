package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin"
	"github.com/pictorhq/pictor/origin/admin"
)

// commands is what both the direct store and a running server's admin
// endpoint can do.
type commands interface {
	CreateOrg(name, plan string) (*admin.Created, error)
	SetSuspended(orgID string, suspended bool) (*admin.OrgState, error)
}

func runAdmin(ctx context.Context, args []string, e env) error {
	if len(args) < 2 || args[0] != "org" {
		fmt.Fprint(e.stderr, usage)
		return errors.New("usage: pictor admin org create|suspend|resume")
	}
	action := args[1]
	fs := newFlagSet("admin org "+action, e.stderr, e.getenv)
	var dataDir, store, blobs, name, plan, orgID string
	fs.StringVar(&dataDir, "data-dir", "", "data directory of the store (required without --store)")
	// Accepted so that the origins' flags can be passed as they are:
	// organization commands touch no image files.
	fs.StringVar(&blobs, "blobs", "", "the origins' --blobs; accepted and unused: organization commands touch no image files")
	fs.StringVar(&store, "store", "", "PostgreSQL database of the records (postgres://...), as the origins' --store; the master key then comes from PICTOR_MASTER_KEY or --data-dir")
	switch action {
	case "create":
		fs.StringVar(&name, "name", "", "organization name (required)")
		fs.StringVar(&plan, "plan", "", "plan: free, basic, pro or scale (required)")
	case "suspend", "resume":
		fs.StringVar(&orgID, "org", "", "organization id (required)")
	default:
		return fmt.Errorf("unknown admin org command %q (want create, suspend or resume)", action)
	}
	if err := fs.parse(args[2:]); err != nil {
		return err
	}
	required := []string{"name", "plan"}
	if action != "create" {
		required = []string{"org"}
	}
	if store == "" {
		required = append([]string{"data-dir"}, required...)
	}
	if err := fs.require(required...); err != nil {
		return err
	}
	if store != "" && dataDir == "" && e.getenv("PICTOR_MASTER_KEY") == "" {
		return errors.New("--store needs the origins' master key: set PICTOR_MASTER_KEY, or --data-dir holding master.key")
	}
	slog.SetDefault(newLogger(e.stderr, slog.LevelWarn))

	var out any
	err := withCommands(dataDir, store, e, func(c commands) error {
		var err error
		switch action {
		case "create":
			out, err = c.CreateOrg(name, plan)
		case "suspend":
			out, err = c.SetSuspended(orgID, true)
		case "resume":
			out, err = c.SetSuspended(orgID, false)
		}
		return err
	})
	if err != nil {
		return err
	}
	enc := json.NewEncoder(e.stdout)
	return enc.Encode(out)
}

// withCommands runs fn on the store directly, or through the running
// server's admin endpoint when a server holds the embedded store.
func withCommands(dataDir, storeURL string, e env, fn func(commands) error) error {
	store, err := origin.OpenStore(dataDir, storeURL)
	if errors.Is(err, kv.ErrLocked) {
		client, derr := admin.Dial(dataDir)
		if derr != nil {
			return fmt.Errorf("the data directory is in use, but its server's admin endpoint is unknown: %w", derr)
		}
		return fn(client)
	}
	if err != nil {
		return err
	}
	defer store.Close()
	svc, done, err := origin.AdminService(store, e.getenv("PICTOR_MASTER_KEY"), dataDir, storeURL != "")
	if err != nil {
		return err
	}
	defer done()
	return fn(svc)
}
