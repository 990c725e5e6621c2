package origin

import (
	"context"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/migrate"
	"github.com/pictorhq/pictor/origin/og"
)

// migrations are the store's data migrations, forward only (kv/migrate):
// append a step, never change or remove one. Each must be idempotent and
// leave records the release before it still reads, since that release
// keeps serving while the new one rolls out (docs/operations.md,
// Upgrades and rollbacks).
var migrations = []migrate.Migration{
	// 1: the records as of the first release that recorded its version.
	{Name: "baseline"},
	// 2: OG page records keep their resolved request as the renderer's
	// parameters ("params") beside the request as JSON ("request", kept
	// byte for byte for one release: the release before reads only it and
	// ignores "params"; records it writes meanwhile, without "params",
	// are read from "request" as before). The release that stops writing
	// "request" reruns this step as a new one first. Idempotent: a record
	// is rewritten under its page lock only while it has no "params".
	{Name: "og pages: canonical parameters", Run: og.MigratePages},
}

// migrateTimeout bounds the data migrations at start: a step rewrites
// records one transaction each, and one that runs out of time is taken up
// again at the next start (steps are idempotent).
const migrateTimeout = 30 * time.Minute

// migrateStore applies the migrations store lacks, and refuses a store a
// newer binary migrated (migrate.ErrTooNew).
func migrateStore(store kv.Store) error {
	ctx, cancel := context.WithTimeout(context.Background(), migrateTimeout)
	defer cancel()
	applied, err := migrate.Apply(ctx, store, migrations, buildRevision(), time.Now)
	if err != nil {
		return err
	}
	for _, v := range applied {
		slog.InfoContext(ctx, "store migrated", "version", v, "name", migrations[v-1].Name)
	}
	return nil
}

// buildRevision names this binary in the migration record: its VCS
// revision when the build recorded one.
func buildRevision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return info.Main.Version
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}
