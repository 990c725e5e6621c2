package origin

import (
	"context"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/migrate"
)

// migrations are the store's data migrations, forward only (kv/migrate):
// append a step, never change or remove one. Each must be idempotent and
// leave records the release before it still reads, since that release
// keeps serving while the new one rolls out (docs/operations.md,
// Upgrades and rollbacks).
var migrations = []migrate.Migration{
	// 1: the records as of the first release that recorded its version.
	{Name: "baseline"},
}

// migrateStore applies the migrations store lacks, and refuses a store a
// newer binary migrated (migrate.ErrTooNew).
func migrateStore(store kv.Store) error {
	ctx, cancel := context.WithTimeout(context.Background(), storeOpenTimeout)
	defer cancel()
	applied, err := migrate.Apply(ctx, store, migrations, buildRevision(), time.Now)
	if err != nil {
		return err
	}
	for _, v := range applied {
		slog.Info("store migrated", "version", v, "name", migrations[v-1].Name)
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
