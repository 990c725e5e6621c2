package origin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/pebblekv"
	"github.com/pictorhq/pictor/origin/admin"
	"github.com/pictorhq/pictor/origin/blob"
	"github.com/pictorhq/pictor/origin/rendition"
	"github.com/pictorhq/pictor/origin/seal"
)

// A backup of the embedded data directory is a checkpoint of the store
// and, for every image the checkpoint holds, the files its record names,
// as they were when the checkpoint was taken. Images' files are written
// before their record names them and removed after their record is gone,
// so each one the checkpoint names was on disk then; while the backup
// runs, the files store keeps a hard link to each file it is about to
// remove or replace (keptBlobs), so that the one the checkpoint names is
// still there when the backup reaches it.

// imagesDir is the files store's directory inside the data directory.
const imagesDir = "images"

// errUnsupported is the refusal of a data directory whose data lies
// elsewhere.
var errUnsupported = fmt.Errorf("%w: with --store (PostgreSQL) or --blobs (S3, or another directory), back up the PostgreSQL database, the bucket (or directory) and the master key together (see docs/operations.md, Backups)", admin.ErrBackupUnsupported)

// backupSecrets are the files of the data directory a backup holds besides
// the store and the images: each one that exists.
var backupSecrets = []string{seal.KeyFile, seal.PreviousKeyFile, EdgeTokenFile, OAuthKeyFile}

// keptBlobs is the files store of the data directory, which keeps, while
// a backup runs, a link to every file it removes or replaces.
type keptBlobs struct {
	*blob.Store
	mu     sync.RWMutex // held for reading by each Put and Remove, for writing to begin or end a backup
	keep   string       // where links go while a backup runs; "" otherwise
	failMu sync.Mutex
	failed error // the first link that could not be made
}

var _ blob.Blobs = (*keptBlobs)(nil)

// Put implements blob.Blobs.
func (b *keptBlobs) Put(ctx context.Context, id, name string, data []byte) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.keep != "" {
		b.link(id, name)
	}
	return b.Store.Put(ctx, id, name, data)
}

// Remove implements blob.Blobs.
func (b *keptBlobs) Remove(ctx context.Context, id string) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.keep != "" {
		if p, err := b.Path(id, "x"); err == nil {
			entries, _ := os.ReadDir(filepath.Dir(p))
			for _, e := range entries {
				if !strings.HasPrefix(e.Name(), ".") {
					b.link(id, e.Name())
				}
			}
		}
	}
	return b.Store.Remove(ctx, id)
}

// link keeps the current file id/name, unless one is kept already (the
// oldest is the one a checkpoint may name). It never fails the caller: a
// link that cannot be made fails the backup instead.
func (b *keptBlobs) link(id, name string) {
	src, err := b.Path(id, name)
	if err != nil {
		return
	}
	dst := filepath.Join(b.keep, id, name)
	if err = os.MkdirAll(filepath.Dir(dst), 0o700); err == nil {
		err = os.Link(src, dst)
	}
	if err == nil || errors.Is(err, fs.ErrExist) || errors.Is(err, fs.ErrNotExist) && !exists(src) {
		return
	}
	b.failMu.Lock()
	if b.failed == nil {
		b.failed = fmt.Errorf("keep %s/%s for the backup: %w", id, name, err)
	}
	b.failMu.Unlock()
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// begin starts keeping files in dir.
func (b *keptBlobs) begin(dir string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.keep != "" {
		return fmt.Errorf("%w: another backup is running", admin.ErrBackupUnsupported)
	}
	b.keep = dir
	b.failMu.Lock()
	b.failed = nil
	b.failMu.Unlock()
	return nil
}

// end stops keeping files; it returns the first link that failed.
func (b *keptBlobs) end() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.keep = ""
	b.failMu.Lock()
	defer b.failMu.Unlock()
	return b.failed
}

// backupSource is what a backup reads: the store, the data directory
// and its files store (kept set when a server may write meanwhile).
type backupSource struct {
	store   kv.Store
	dataDir string
	files   *blob.Store
	kept    *keptBlobs
	// checkpointed, when set, runs once the checkpoint is taken (tests).
	checkpointed func()
}

// writeBackup writes the archive of src to w.
func writeBackup(ctx context.Context, w io.Writer, src backupSource) (*admin.Manifest, error) {
	pstore, ok := src.store.(*pebblekv.Store)
	if !ok || src.files == nil {
		return nil, errUnsupported
	}
	tmp, err := os.MkdirTemp(src.dataDir, ".backup-*")
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	defer os.RemoveAll(tmp)
	if src.kept != nil {
		if err := src.kept.begin(filepath.Join(tmp, "kept")); err != nil {
			return nil, err
		}
		defer src.kept.end()
	}
	checkpoint := filepath.Join(tmp, StoreDir)
	if err := pstore.Checkpoint(checkpoint); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	if src.checkpointed != nil {
		src.checkpointed()
	}
	aw := admin.NewArchiveWriter(w)
	for _, name := range backupSecrets {
		err := aw.AddFile(name, filepath.Join(src.dataDir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // a master key or edge token given by flag or variable
		}
		if err != nil {
			return nil, fmt.Errorf("backup %s: %w", name, err)
		}
	}
	entries, err := os.ReadDir(checkpoint)
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := aw.AddFile(StoreDir+"/"+e.Name(), filepath.Join(checkpoint, e.Name())); err != nil {
			return nil, fmt.Errorf("backup the store: %w", err)
		}
	}
	if err := addImages(ctx, aw, checkpoint, src, filepath.Join(tmp, "kept")); err != nil {
		return nil, err
	}
	if src.kept != nil {
		if err := src.kept.end(); err != nil {
			return nil, fmt.Errorf("backup: %w", err)
		}
	}
	return aw.Close()
}

// imageRecord is the part of an image's record a backup reads.
type imageRecord struct {
	ID         string                    `json:"id"`
	Renditions map[string]rendition.Info `json:"renditions"`
}

// addImages adds the files of every image the checkpoint holds.
func addImages(ctx context.Context, aw *admin.ArchiveWriter, checkpoint string, src backupSource, kept string) error {
	snap, err := pebblekv.Open(checkpoint, pebblekv.Options{ReadOnly: true, Logger: slog.Default()})
	if err != nil {
		return fmt.Errorf("backup: read the checkpoint: %w", err)
	}
	defer snap.Close()
	root := filepath.Join(src.dataDir, imagesDir)
	it := snap.Iterate(ctx, []byte("img/"), kv.IterOptions{})
	defer it.Close()
	for it.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		var rec imageRecord
		if err := json.Unmarshal(it.Value(), &rec); err != nil {
			return fmt.Errorf("backup: decode %s: %w", it.Key(), err)
		}
		if len(rec.Renditions) > 0 {
			aw.CountImage()
		}
		for format, rend := range rec.Renditions {
			name, ok := rendition.FileName(format)
			if !ok {
				return fmt.Errorf("backup: image %s has a rendition of unknown format %q", rec.ID, format)
			}
			live, err := src.files.Path(rec.ID, name)
			if err != nil {
				return fmt.Errorf("backup: image %s: %w", rec.ID, err)
			}
			rel, err := filepath.Rel(root, live)
			if err != nil || strings.HasPrefix(rel, "..") {
				return fmt.Errorf("%w (image files outside %s)", errUnsupported, root)
			}
			f, err := openKept(filepath.Join(kept, rec.ID, name), live, rend.Size)
			if err != nil {
				return fmt.Errorf("backup: the store names %s of image %s, which is missing from %s (if this data directory's images live elsewhere, --blobs, see docs/operations.md, Backups): %w",
					format, rec.ID, root, err)
			}
			err = aw.AddOpen(imagesDir+"/"+filepath.ToSlash(rel), f)
			f.Close()
			if err != nil {
				return fmt.Errorf("backup: image %s: %w", rec.ID, err)
			}
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("backup: read the checkpoint: %w", err)
	}
	return nil
}

// openKept opens the version of a file its record describes (its size):
// the one kept when it was removed or replaced during the backup, or the
// live one. When neither has the size (a master re-compressed between
// its write and its record's, which keeps its ETag and pixels), the live
// one, else the kept one, is taken.
func openKept(kept, live string, size int64) (*os.File, error) {
	var fallback *os.File
	for _, p := range []string{kept, live, kept} {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		fi, err := f.Stat()
		if err == nil && fi.Size() == size {
			if fallback != nil {
				fallback.Close()
			}
			return f, nil
		}
		if fallback == nil && p == live {
			fallback = f
		} else {
			f.Close()
		}
	}
	if fallback != nil {
		return fallback, nil
	}
	f, err := os.Open(kept)
	if err != nil {
		return nil, fs.ErrNotExist
	}
	return f, nil
}

// removeStaleBackups removes what backups that died left in the data
// directory; it runs once the store is held, when no backup can run.
func removeStaleBackups(dataDir string) {
	stale, _ := filepath.Glob(filepath.Join(dataDir, ".backup-*"))
	for _, dir := range stale {
		if err := os.RemoveAll(dir); err != nil {
			slog.Warn("a dead backup's files could not be removed", "dir", dir, "error", err)
		}
	}
}

// Restore unpacks the backup at archive into dataDir, which must not exist
// or be empty (admin.Restore), once its store opens.
func Restore(archive, dataDir string) (*admin.Manifest, error) {
	return admin.Restore(archive, dataDir, func(dir string) error {
		s, err := pebblekv.Open(filepath.Join(dir, StoreDir), pebblekv.Options{ReadOnly: true, Logger: slog.Default()})
		if err != nil {
			return err
		}
		return s.Close()
	})
}
