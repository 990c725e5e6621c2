package origin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/pebblekv"
	"github.com/pictorhq/pictor/origin/admin"
	"github.com/pictorhq/pictor/origin/blob"
	"github.com/pictorhq/pictor/origin/rendition"
)

// backupDir is a data directory with a real store and files store.
type backupDir struct {
	dir   string
	store *pebblekv.Store
	files *blob.Store
	kept  *keptBlobs
}

func newBackupDir(t *testing.T) *backupDir {
	t.Helper()
	dir := t.TempDir()
	store, err := pebblekv.Open(filepath.Join(dir, StoreDir), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	files, err := blob.Open(filepath.Join(dir, imagesDir))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "master.key"), []byte("key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return &backupDir{dir: dir, store: store, files: files, kept: &keptBlobs{Store: files}}
}

// image stores files (format: bytes) through the files store, then the
// record naming them, as the image service does.
func (d *backupDir) image(t *testing.T, id string, files map[string]string) {
	t.Helper()
	rec := rendition.Image{ID: id, State: rendition.StateReady, Renditions: map[string]rendition.Info{}}
	for format, data := range files {
		name, _ := rendition.FileName(format)
		if err := d.kept.Put(context.Background(), id, name, []byte(data)); err != nil {
			t.Fatal(err)
		}
		rec.Renditions[format] = rendition.Info{Size: int64(len(data)), ETag: `"` + format + `"`}
	}
	raw, _ := json.Marshal(rec)
	if err := d.store.Put([]byte("img/"+id), raw); err != nil {
		t.Fatal(err)
	}
}

func (d *backupDir) backup(t *testing.T, checkpointed func()) (*admin.Manifest, []byte, error) {
	t.Helper()
	var buf bytes.Buffer
	m, err := writeBackup(context.Background(), &buf, backupSource{store: d.store, dataDir: d.dir, files: d.files, kept: d.kept, checkpointed: checkpointed})
	return m, buf.Bytes(), err
}

// TestBackupKeepsWhatTheCheckpointNames: an image deleted and a master
// replaced after the checkpoint are archived as the checkpoint names them;
// an image made after it, and files no record names, are not archived.
func TestBackupKeepsWhatTheCheckpointNames(t *testing.T) {
	d := newBackupDir(t)
	ctx := context.Background()
	const gone, swapped, pending, late = "0190aaaa-gone", "0190bbbb-swapped", "0190cccc-pending", "0190dddd-late"
	d.image(t, gone, map[string]string{"png": "gone master", "pdf": "%PDF gone"})
	d.image(t, swapped, map[string]string{"png": "as captured, large"})
	d.image(t, pending, nil)
	if err := d.files.Put(ctx, "0190eeee-orphan", "image.png", []byte("no record")); err != nil {
		t.Fatal(err)
	}

	m, archive, err := d.backup(t, func() {
		// After the checkpoint: a delete (record, then files), a
		// compaction (new bytes, then the record), a new image.
		if err := d.store.Delete([]byte("img/" + gone)); err != nil {
			t.Error(err)
		}
		if err := d.kept.Remove(ctx, gone); err != nil {
			t.Error(err)
		}
		if err := d.kept.Put(ctx, swapped, "image.png", []byte("compact")); err != nil {
			t.Error(err)
		}
		d.image(t, swapped, map[string]string{"png": "compact"})
		d.image(t, late, map[string]string{"png": "late"})
	})
	if err != nil {
		t.Fatal(err)
	}
	if m.Images != 2 {
		t.Fatalf("manifest counts %d images, want 2", m.Images)
	}
	if p, _ := d.files.Path(gone, "image.png"); exists(p) {
		t.Fatal("the delete during the backup did not remove the files")
	}
	if left, _ := filepath.Glob(filepath.Join(d.dir, ".backup-*")); len(left) != 0 {
		t.Fatalf("the backup left %v", left)
	}

	path := filepath.Join(t.TempDir(), "b.tar.gz")
	os.WriteFile(path, archive, 0o600)
	restored := filepath.Join(t.TempDir(), "data")
	if _, err := Restore(path, restored); err != nil {
		t.Fatal(err)
	}
	rfiles, _ := blob.Open(filepath.Join(restored, imagesDir))
	want := map[string]string{ // id/name: bytes; "" for absent
		gone + "/image.png":              "gone master",
		gone + "/document.pdf":           "%PDF gone",
		swapped + "/image.png":           "as captured, large",
		late + "/image.png":              "",
		"0190eeee-orphan" + "/image.png": "",
	}
	for key, body := range want {
		id, name, _ := strings.Cut(key, "/")
		got, err := rfiles.Read(ctx, id, name)
		switch {
		case body == "" && !errors.Is(err, blob.ErrNotFound):
			t.Errorf("%s restored (%q, %v), want it left out", key, got, err)
		case body != "" && string(got) != body:
			t.Errorf("%s restored as %q (%v), want %q", key, got, err, body)
		}
	}
	rstore, err := pebblekv.Open(filepath.Join(restored, StoreDir), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rstore.Close()
	for id, want := range map[string]bool{gone: true, swapped: true, pending: true, late: false} {
		if _, err := rstore.Get(ctx, []byte("img/"+id)); (err == nil) != want {
			t.Errorf("record of %s in the restored store: %v, want present %v", id, err, want)
		}
	}
	if key, err := os.ReadFile(filepath.Join(restored, "master.key")); err != nil || string(key) != "key\n" {
		t.Fatalf("master key restored as %q (%v)", key, err)
	}
}

// TestBackupRefuses: a record whose file is missing fails the backup,
// saying where the files were looked for; so does a second backup while
// one runs, and a source that is not the embedded store.
func TestBackupRefuses(t *testing.T) {
	d := newBackupDir(t)
	d.image(t, "0190aaaa-img", map[string]string{"png": "master"})
	if err := d.files.Remove(context.Background(), "0190aaaa-img"); err != nil {
		t.Fatal(err)
	}
	_, _, err := d.backup(t, nil)
	if err == nil || !strings.Contains(err.Error(), "0190aaaa-img") || !strings.Contains(err.Error(), "--blobs") {
		t.Fatalf("backup with a file missing = %v", err)
	}

	d = newBackupDir(t)
	var second error
	var once sync.Once
	_, _, err = d.backup(t, func() {
		once.Do(func() { _, _, second = d.backup(t, nil) })
	})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(second, admin.ErrBackupUnsupported) || !strings.Contains(second.Error(), "another backup") {
		t.Fatalf("a backup during a backup = %v", second)
	}

	var buf bytes.Buffer
	if _, err := writeBackup(context.Background(), &buf, backupSource{store: d.store, dataDir: d.dir}); !errors.Is(err, admin.ErrBackupUnsupported) {
		t.Fatalf("a backup without the files store = %v", err)
	}
	if _, err := writeBackup(context.Background(), &buf, backupSource{store: otherStore{d.store}, dataDir: d.dir, files: d.files}); !errors.Is(err, admin.ErrBackupUnsupported) ||
		!strings.Contains(err.Error(), "PostgreSQL") {
		t.Fatalf("a backup of another store = %v", err)
	}
	if buf.Len() != 0 {
		t.Fatal("a refused backup wrote")
	}
}

// TestBackupSecretsAreArchived: every secret file a backup takes is a name
// the archive accepts, and comes back.
func TestBackupSecretsAreArchived(t *testing.T) {
	d := newBackupDir(t)
	for _, name := range backupSecrets {
		if !admin.ValidName(name) {
			t.Fatalf("%s is not a name archives accept", name)
		}
		if err := os.WriteFile(filepath.Join(d.dir, name), []byte(name+" secret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// What a running server makes for itself, and stays out.
	made := []string{admin.EndpointFile, "chromium/Default/Cookies", "wasm-cache/guest", "edge-cache/00/entry"}
	for _, name := range made {
		p := filepath.Join(d.dir, name)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, archive, err := d.backup(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "b")
	os.WriteFile(path, archive, 0o600)
	restored := filepath.Join(t.TempDir(), "data")
	if _, err := Restore(path, restored); err != nil {
		t.Fatal(err)
	}
	for _, name := range backupSecrets {
		if got, err := os.ReadFile(filepath.Join(restored, name)); err != nil || string(got) != name+" secret\n" {
			t.Fatalf("%s restored as %q (%v)", name, got, err)
		}
	}
	for _, name := range made {
		if _, err := os.Stat(filepath.Join(restored, strings.Split(name, "/")[0])); err == nil {
			t.Fatalf("%s restored", name)
		}
	}
}

// otherStore is a store that is not the embedded one.
type otherStore struct{ kv.Store }
