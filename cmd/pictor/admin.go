package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin"
	"github.com/pictorhq/pictor/origin/admin"
	"github.com/pictorhq/pictor/origin/durable"
	"github.com/pictorhq/pictor/origin/seal"
)

// commands is what both the direct store and a running server's admin
// endpoint can do.
type commands interface {
	CreateOrg(ctx context.Context, name, plan string) (*admin.Created, error)
	SetSuspended(ctx context.Context, orgID string, suspended bool) (*admin.OrgState, error)
	ListOrgs(ctx context.Context) (*admin.OrgList, error)
	SetPlan(ctx context.Context, orgID, plan string) (*admin.Org, error)
	CreateKey(ctx context.Context, orgID, name string) (*admin.KeyCreated, error)
	Backup(ctx context.Context, w io.Writer) error
	Reseal(ctx context.Context) (*admin.ResealReport, error)
}

var (
	_ commands = (*admin.Service)(nil)
	_ commands = (*admin.Client)(nil)
)

const adminUsage = "usage: pictor admin org create|list|set-plan|suspend|resume, pictor admin key create, pictor admin backup|restore, pictor admin reseal"

func runAdmin(ctx context.Context, args []string, e env) error {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usage)
		return errors.New(adminUsage)
	}
	switch args[0] {
	case "org":
		if len(args) < 2 {
			fmt.Fprint(e.stderr, usage)
			return errors.New(adminUsage)
		}
		return runAdminOrg(ctx, args[1], args[2:], e)
	case "key":
		if len(args) < 2 || args[1] != "create" {
			fmt.Fprint(e.stderr, usage)
			return errors.New("usage: pictor admin key create --data-dir DIR --org ORG_ID [--name NAME]")
		}
		return runAdminKey(ctx, args[2:], e)
	case "backup":
		return runBackup(ctx, args[1:], e)
	case "restore":
		return runRestore(args[1:], e)
	case "reseal":
		return runReseal(ctx, args[1:], e)
	}
	fmt.Fprint(e.stderr, usage)
	return fmt.Errorf("unknown admin command %q (%s)", args[0], adminUsage)
}

// storeFlags registers the flags that locate the data: the origins' own.
func storeFlags(fs *flagSet, dataDir, store, blobs *string, blobsUse string) {
	fs.StringVar(dataDir, "data-dir", "", "data directory of the store (required without --store)")
	fs.StringVar(store, "store", "", "PostgreSQL database of the records (postgres://...), as the origins' --store; the master key then comes from PICTOR_MASTER_KEY or --data-dir")
	fs.StringVar(blobs, "blobs", "", "the origins' --blobs; "+blobsUse)
}

// checkStoreFlags reports the flags missing to reach the store.
func checkStoreFlags(fs *flagSet, dataDir, store string, e env, required ...string) error {
	if store == "" {
		required = append([]string{"data-dir"}, required...)
	}
	if err := fs.require(required...); err != nil {
		return err
	}
	if store != "" && dataDir == "" && e.getenv("PICTOR_MASTER_KEY") == "" {
		return errors.New("--store needs the origins' master key: set PICTOR_MASTER_KEY, or --data-dir holding master.key")
	}
	return nil
}

func runAdminOrg(ctx context.Context, action string, args []string, e env) error {
	fs := newFlagSet("admin org "+action, e.stderr, e.getenv)
	var dataDir, store, blobs, name, plan, orgID string
	// Accepted so that the origins' flags can be passed as they are.
	storeFlags(fs, &dataDir, &store, &blobs, "accepted and unused: organization commands touch no image files")
	var required []string
	switch action {
	case "create":
		fs.StringVar(&name, "name", "", "organization name (required)")
		fs.StringVar(&plan, "plan", "", "plan: free, basic, pro or scale (required)")
		required = []string{"name", "plan"}
	case "suspend", "resume":
		fs.StringVar(&orgID, "org", "", "organization id (required)")
		required = []string{"org"}
	case "set-plan":
		fs.StringVar(&orgID, "org", "", "organization id (required)")
		fs.StringVar(&plan, "plan", "", "the new plan: free, basic, pro or scale (required)")
		required = []string{"org", "plan"}
	case "list":
	default:
		return fmt.Errorf("unknown admin org command %q (want create, list, set-plan, suspend or resume)", action)
	}
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := checkStoreFlags(fs, dataDir, store, e, required...); err != nil {
		return err
	}
	slog.SetDefault(newLogger(e.stderr, slog.LevelWarn))

	var out any
	err := withCommands(ctx, dataDir, store, e, func(c commands) error {
		var err error
		switch action {
		case "create":
			out, err = c.CreateOrg(ctx, name, plan)
		case "suspend":
			out, err = c.SetSuspended(ctx, orgID, true)
		case "resume":
			out, err = c.SetSuspended(ctx, orgID, false)
		case "list":
			out, err = c.ListOrgs(ctx)
		case "set-plan":
			out, err = c.SetPlan(ctx, orgID, plan)
		}
		return err
	})
	if err != nil {
		return err
	}
	return json.NewEncoder(e.stdout).Encode(out)
}

// runAdminKey creates an owner key: every permission, present and future,
// as the first key of an organization holds. Its secret is printed once,
// on standard output, and nowhere else.
func runAdminKey(ctx context.Context, args []string, e env) error {
	fs := newFlagSet("admin key create", e.stderr, e.getenv)
	var dataDir, store, blobs, orgID, name string
	storeFlags(fs, &dataDir, &store, &blobs, "accepted and unused: key commands touch no image files")
	fs.StringVar(&orgID, "org", "", "organization id (required)")
	fs.StringVar(&name, "name", "", "the key's name (default \""+admin.OwnerKeyName+"\")")
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := checkStoreFlags(fs, dataDir, store, e, "org"); err != nil {
		return err
	}
	slog.SetDefault(newLogger(e.stderr, slog.LevelWarn))
	var created *admin.KeyCreated
	err := withCommands(ctx, dataDir, store, e, func(c commands) error {
		var err error
		created, err = c.CreateKey(ctx, orgID, name)
		return err
	})
	if err != nil {
		return err
	}
	if created.Suspended {
		fmt.Fprintf(e.stderr, "pictor: organization %s is suspended: the key authenticates once it is resumed (pictor admin org resume)\n", created.OrgID)
	}
	return json.NewEncoder(e.stdout).Encode(created)
}

// errResealIncomplete: values no key of the ring opened are left as they
// were.
var errResealIncomplete = errors.New("some sealed values open under no master key given: they are left as they were (their record ids are logged); keep the previous keys until they are found")

// runReseal seals every stored secret again under the current master key
// (a master key rotation's pass, docs/operations.md) and prints what it
// did; it fails when a value opened under no key.
func runReseal(ctx context.Context, args []string, e env) error {
	fs := newFlagSet("admin reseal", e.stderr, e.getenv)
	var dataDir, store, blobs string
	storeFlags(fs, &dataDir, &store, &blobs, "accepted and unused: the pass touches no image files")
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := checkStoreFlags(fs, dataDir, store, e); err != nil {
		return err
	}
	slog.SetDefault(newLogger(e.stderr, slog.LevelWarn))
	var report *admin.ResealReport
	err := withCommands(ctx, dataDir, store, e, func(c commands) error {
		var err error
		report, err = c.Reseal(ctx)
		return err
	})
	if err != nil {
		return err
	}
	if err := json.NewEncoder(e.stdout).Encode(report); err != nil {
		return err
	}
	if !report.Done() {
		return errResealIncomplete
	}
	return nil
}

// errBackupElsewhere refuses backups and restores of data that is not all
// in the data directory.
var errBackupElsewhere = errors.New("backup and restore cover the embedded store (--data-dir alone): with --store (PostgreSQL) or --blobs (S3, or another directory), back up the PostgreSQL database, the bucket and the master key together (see docs/operations.md, Backups)")

func defaultBlobs(blobs string) bool { return blobs == "" || blobs == "file:" }

// backupSummary is what backup and restore print.
type backupSummary struct {
	Path      string    `json:"path"`
	CreatedAt time.Time `json:"created_at"`
	Files     int       `json:"files"`
	Images    int       `json:"images"`
	Bytes     int64     `json:"bytes"` // the archive's size (backup) or the restored files' (restore)
	MasterKey bool      `json:"master_key"`
}

const noMasterKey = "pictor: the backup holds no master.key (the server had PICTOR_MASTER_KEY): keep that key with the backup; a restored server needs it\n"

// runBackup writes a backup of the data directory to --out: through the
// running server's admin endpoint when one holds the store, from the
// store directly otherwise. The archive is written under a temporary
// name (mode 0600) in --out's directory, verified, then renamed.
func runBackup(ctx context.Context, args []string, e env) error {
	fs := newFlagSet("admin backup", e.stderr, e.getenv)
	var dataDir, store, blobs, out string
	storeFlags(fs, &dataDir, &store, &blobs, "backups refuse any but the default (files in <data-dir>/images)")
	fs.StringVar(&out, "out", "", "the archive to write (required); it holds the secrets: mode 0600")
	if err := fs.parse(args); err != nil {
		return err
	}
	if store != "" || !defaultBlobs(blobs) {
		return errBackupElsewhere
	}
	if err := fs.require("data-dir", "out"); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dataDir, origin.StoreDir)); err != nil {
		return fmt.Errorf("no embedded store in %s (%w): %w", dataDir, err, errBackupElsewhere)
	}
	slog.SetDefault(newLogger(e.stderr, slog.LevelWarn))

	out, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp-*") // mode 0600
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name()) // fails once renamed
	}()
	err = withCommands(ctx, dataDir, "", e, func(c commands) error {
		if _, ok := c.(*admin.Service); ok {
			if err := serverOnOtherStore(ctx, dataDir); err != nil {
				return err
			}
		}
		return c.Backup(ctx, tmp)
	})
	if err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write the backup: %w", err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return err
	}
	m, err := admin.Verify(tmp)
	if err != nil {
		return fmt.Errorf("the backup written does not verify: %w", err)
	}
	size, err := tmp.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write the backup: %w", err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return fmt.Errorf("write the backup: %w", err)
	}
	if err := durable.SyncDir(filepath.Dir(out)); err != nil {
		return fmt.Errorf("write the backup: %w", err)
	}
	if !m.HasMasterKey() {
		fmt.Fprint(e.stderr, noMasterKey)
	}
	return json.NewEncoder(e.stdout).Encode(backupSummary{Path: out, CreatedAt: m.CreatedAt, Files: len(m.Files),
		Images: m.Images, Bytes: size, MasterKey: m.HasMasterKey()})
}

// serverOnOtherStore refuses a backup of the embedded store while a server
// runs on the data directory without holding it (with --store): the
// records it serves are elsewhere. A server that died left its endpoint
// file, but does not answer.
func serverOnOtherStore(ctx context.Context, dataDir string) error {
	c, err := admin.Dial(dataDir)
	if err != nil {
		return nil
	}
	if _, err := c.ListOrgs(ctx); err != nil {
		return nil
	}
	return fmt.Errorf("a server runs on %s without its embedded store: %w", dataDir, errBackupElsewhere)
}

// runRestore unpacks a backup into an empty or new data directory.
func runRestore(args []string, e env) error {
	fs := newFlagSet("admin restore", e.stderr, e.getenv)
	var dataDir, store, blobs, from string
	fs.StringVar(&dataDir, "data-dir", "", "the data directory to restore into (required): it must not exist, or be empty")
	fs.StringVar(&store, "store", "", "the origins' --store; restores refuse it")
	fs.StringVar(&blobs, "blobs", "", "the origins' --blobs; restores refuse any but the default")
	fs.StringVar(&from, "from", "", "the archive `pictor admin backup` wrote (required)")
	if err := fs.parse(args); err != nil {
		return err
	}
	if store != "" || !defaultBlobs(blobs) {
		return errBackupElsewhere
	}
	if err := fs.require("data-dir", "from"); err != nil {
		return err
	}
	slog.SetDefault(newLogger(e.stderr, slog.LevelWarn))
	m, err := origin.Restore(from, dataDir)
	if err != nil {
		return err
	}
	abs, _ := filepath.Abs(dataDir)
	if !m.HasMasterKey() {
		fmt.Fprint(e.stderr, noMasterKey)
	}
	return json.NewEncoder(e.stdout).Encode(backupSummary{Path: abs, CreatedAt: m.CreatedAt, Files: len(m.Files),
		Images: m.Images, Bytes: m.Size(), MasterKey: m.HasMasterKey()})
}

// withCommands runs fn on the store directly, or through the running
// server's admin endpoint when a server holds the embedded store.
func withCommands(ctx context.Context, dataDir, storeURL string, e env, fn func(commands) error) error {
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
	keys := seal.Keys{Current: e.getenv("PICTOR_MASTER_KEY"), Previous: e.getenv("PICTOR_MASTER_KEY_PREVIOUS"), Next: e.getenv("PICTOR_MASTER_KEY_NEXT")}
	svc, done, err := origin.AdminService(ctx, store, keys, dataDir, storeURL != "")
	if err != nil {
		return err
	}
	defer done()
	return fn(svc)
}
