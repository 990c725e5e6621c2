package admin

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pictorhq/pictor/origin/durable"
)

// A backup archive is one gzip-compressed tar file. Its entries are
// regular files named as they lie in the data directory (ValidName); the
// last entry is the manifest (ManifestName), which lists every other
// entry with its size and SHA-256. Restore reads the whole archive and
// checks it against the manifest before it writes anything.

// ManifestName is the archive's last entry.
const ManifestName = "pictor-backup.json"

// Archive identification in the manifest.
const (
	ArchiveFormat  = "pictor-backup"
	ArchiveVersion = 1
)

// Files of the data directory a backup holds besides the store (kv/) and
// the images (images/): the secrets. The admin endpoint file, the
// Chromium profiles, the template sandbox's compilation cache and the
// edge's disk cache are made again at start, and left out.
var secretFiles = []string{"master.key", "master.key.previous", "edge.token", "oauth-signing-key.pem"}

// MasterKeyFile is the master key's name in the archive and the data
// directory.
const MasterKeyFile = "master.key"

// maxManifest bounds the manifest an archive may carry.
const maxManifest = 256 << 20

// Manifest describes a backup.
type Manifest struct {
	Format    string         `json:"format"`
	Version   int            `json:"version"`
	CreatedAt time.Time      `json:"created_at"`
	Files     []ManifestFile `json:"files"`
	// Images is how many images the backup holds files of.
	Images int `json:"images"`
}

// ManifestFile is one entry of the archive.
type ManifestFile struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// HasMasterKey reports whether the archive holds the master key (a server
// given PICTOR_MASTER_KEY keeps none in its data directory).
func (m *Manifest) HasMasterKey() bool {
	for _, f := range m.Files {
		if f.Name == MasterKeyFile {
			return true
		}
	}
	return false
}

// Size is the total size of the archived files.
func (m *Manifest) Size() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Size
	}
	return n
}

// ValidName reports whether name may be an archive entry: one of the
// secret files, a file of the store (kv/NAME) or an image's file
// (images/SHARD/ID/NAME), every segment a plain name (no "..", no
// leading dot, no separator, no control character).
func ValidName(name string) bool {
	parts := strings.Split(name, "/")
	for _, p := range parts {
		if !validSegment(p) {
			return false
		}
	}
	switch {
	case len(parts) == 1:
		for _, s := range secretFiles {
			if name == s {
				return true
			}
		}
		return false
	case parts[0] == "kv":
		return len(parts) == 2
	case parts[0] == "images":
		return len(parts) == 4
	}
	return false
}

func validSegment(s string) bool {
	if s == "" || len(s) > 255 || s[0] == '.' {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == '\\' || r == ':' {
			return false
		}
	}
	return true
}

// ArchiveWriter writes a backup archive.
type ArchiveWriter struct {
	gz       *gzip.Writer
	tw       *tar.Writer
	now      time.Time
	manifest Manifest
	names    map[string]bool
}

// NewArchiveWriter starts an archive on w.
func NewArchiveWriter(w io.Writer) *ArchiveWriter {
	gz, _ := gzip.NewWriterLevel(w, gzip.BestSpeed) // the store's tables and the images are compressed already
	now := time.Now().UTC().Truncate(time.Second)
	return &ArchiveWriter{gz: gz, tw: tar.NewWriter(gz), now: now, names: map[string]bool{},
		manifest: Manifest{Format: ArchiveFormat, Version: ArchiveVersion, CreatedAt: now}}
}

// Add writes the size bytes r holds as the entry name.
func (a *ArchiveWriter) Add(name string, r io.Reader, size int64) error {
	if !ValidName(name) || name == ManifestName {
		return fmt.Errorf("archive entry %q: not a data directory file", name)
	}
	if a.names[name] {
		return fmt.Errorf("archive entry %q: added twice", name)
	}
	a.names[name] = true
	err := a.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: 0o600,
		ModTime: a.now, Format: tar.FormatPAX})
	if err != nil {
		return fmt.Errorf("archive %s: %w", name, err)
	}
	h := sha256.New()
	if _, err := io.CopyN(a.tw, io.TeeReader(r, h), size); err != nil {
		return fmt.Errorf("archive %s: %w", name, err)
	}
	a.manifest.Files = append(a.manifest.Files, ManifestFile{Name: name, Size: size, SHA256: hex.EncodeToString(h.Sum(nil))})
	return nil
}

// AddFile adds the file at path, as it is when opened, as the entry name.
func (a *ArchiveWriter) AddFile(name, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return a.AddOpen(name, f)
}

// AddOpen adds an open file, its size as it is now.
func (a *ArchiveWriter) AddOpen(name string, f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("archive %s: not a regular file", name)
	}
	return a.Add(name, f, fi.Size())
}

// CountImage counts an image in the manifest.
func (a *ArchiveWriter) CountImage() { a.manifest.Images++ }

// Close writes the manifest and ends the archive; it does not close the
// underlying writer.
func (a *ArchiveWriter) Close() (*Manifest, error) {
	raw, err := json.MarshalIndent(&a.manifest, "", " ")
	if err != nil {
		return nil, err
	}
	err = a.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: ManifestName, Size: int64(len(raw)), Mode: 0o600,
		ModTime: a.now, Format: tar.FormatPAX})
	if err == nil {
		_, err = a.tw.Write(raw)
	}
	if err == nil {
		err = a.tw.Close()
	}
	if err == nil {
		err = a.gz.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("archive manifest: %w", err)
	}
	m := a.manifest
	return &m, nil
}

// invalid wraps a defect of the archive.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArchive, fmt.Sprintf(format, args...))
}

// readArchive walks the archive on r: each entry is checked (name, type,
// no duplicate) and handed to each (nil: read and discarded), then the
// manifest is read and compared with what was seen, and the stream must
// end there, its gzip checksum intact. each's error is returned as it is.
func readArchive(r io.Reader, each func(name string, body io.Reader) error) (*Manifest, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, invalid("not a gzip stream (%v)", err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	type seen struct {
		size int64
		sum  string
	}
	files := map[string]seen{}
	var manifest *Manifest
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, invalid("truncated or corrupted (%v)", err)
		}
		if manifest != nil {
			return nil, invalid("entry %q after the manifest", hdr.Name)
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil, invalid("entry %q is not a regular file (type %q): links and directories are refused", hdr.Name, hdr.Typeflag)
		}
		if hdr.Name == ManifestName {
			if hdr.Size > maxManifest {
				return nil, invalid("manifest of %d bytes", hdr.Size)
			}
			raw, err := io.ReadAll(tr)
			if err != nil {
				return nil, invalid("truncated or corrupted (%v)", err)
			}
			manifest = &Manifest{}
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(manifest); err != nil {
				return nil, invalid("manifest: %v", err)
			}
			continue
		}
		if !ValidName(hdr.Name) || path.Clean(hdr.Name) != hdr.Name {
			return nil, invalid("entry %q is not a file of a data directory (a path outside it is refused)", hdr.Name)
		}
		if _, dup := files[hdr.Name]; dup {
			return nil, invalid("entry %q appears twice", hdr.Name)
		}
		h := sha256.New()
		body := io.TeeReader(tr, h)
		if each != nil {
			if err := each(hdr.Name, body); err != nil {
				return nil, err
			}
		}
		// Whatever each left unread still counts.
		if _, err := io.Copy(io.Discard, body); err != nil {
			return nil, invalid("truncated or corrupted (%v)", err)
		}
		files[hdr.Name] = seen{size: hdr.Size, sum: hex.EncodeToString(h.Sum(nil))}
	}
	// Read to the end of the gzip stream: its checksum is checked there.
	if _, err := io.Copy(io.Discard, gz); err != nil {
		return nil, invalid("truncated or corrupted (%v)", err)
	}
	if manifest == nil {
		return nil, invalid("no manifest (%s): truncated, or not a pictor backup", ManifestName)
	}
	if manifest.Format != ArchiveFormat || manifest.Version != ArchiveVersion {
		return nil, invalid("format %q version %d (this pictor reads %s version %d)", manifest.Format, manifest.Version, ArchiveFormat, ArchiveVersion)
	}
	if len(manifest.Files) != len(files) {
		return nil, invalid("the manifest lists %d files, the archive holds %d", len(manifest.Files), len(files))
	}
	for _, f := range manifest.Files {
		got, ok := files[f.Name]
		switch {
		case !ok:
			return nil, invalid("%s is in the manifest but not in the archive", f.Name)
		case got.size != f.Size || got.sum != f.SHA256:
			return nil, invalid("%s does not match its checksum in the manifest", f.Name)
		}
	}
	return manifest, nil
}

// Verify reads the whole archive and checks every entry against the
// manifest; it writes nothing.
func Verify(r io.Reader) (*Manifest, error) {
	return readArchive(r, nil)
}

// Restore unpacks the archive at archivePath into dataDir, which must not
// exist or be empty. It verifies the whole archive first, then unpacks it
// beside dataDir (files 0600, directories 0700) checking every entry
// again, runs check on the unpacked directory (nil: none), and only then
// moves it into place: on any error nothing is left behind.
func Restore(archivePath, dataDir string, check func(dir string) error) (*Manifest, error) {
	if err := emptyOrMissing(dataDir); err != nil {
		return nil, err
	}
	f, err := os.Open(archivePath)
	if err != nil {
		return nil, fmt.Errorf("open backup: %w", err)
	}
	defer f.Close()
	want, err := Verify(f)
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("read backup: %w", err)
	}
	target, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, err
	}
	parent := filepath.Dir(target)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	staging, err := os.MkdirTemp(parent, ".pictor-restore-*")
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	defer os.RemoveAll(staging) // a no-op once renamed
	sums := make(map[string]string, len(want.Files))
	for _, mf := range want.Files {
		sums[mf.Name] = mf.SHA256
	}
	// The archive is read again: it must still be the one verified.
	got, err := readArchive(f, func(name string, body io.Reader) error {
		return unpack(staging, name, body, sums[name])
	})
	if err != nil {
		return nil, err
	}
	if len(got.Files) != len(want.Files) {
		return nil, invalid("the archive changed while it was restored")
	}
	if err := syncTree(staging); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	if check != nil {
		if err := check(staging); err != nil {
			return nil, fmt.Errorf("restore: the unpacked data does not open: %w", err)
		}
		// What check made (pebble's LOCK file) gets the modes of the rest.
		if err := restrictModes(staging); err != nil {
			return nil, fmt.Errorf("restore: %w", err)
		}
	}
	if err := emptyOrMissing(dataDir); err != nil {
		return nil, err
	}
	// rename(2) replaces an empty directory (os.Rename refuses to), and
	// fails if something was written into it meanwhile.
	if err := syscall.Rename(staging, target); err != nil {
		return nil, fmt.Errorf("restore: move the unpacked data to %s: %w", target, err)
	}
	if err := durable.SyncDir(parent); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	return got, nil
}

// emptyOrMissing refuses a data directory that holds anything.
func emptyOrMissing(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("restore into %s: not a directory", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("%w: %s holds %d entries (%s, ...); restore only into an empty or new directory", ErrNotEmpty, dir, len(entries), entries[0].Name())
	}
	return nil
}

// unpack writes one verified entry under root, checking its checksum.
func unpack(root, name string, body io.Reader, sum string) error {
	dst := filepath.Join(root, filepath.FromSlash(name))
	if !strings.HasPrefix(dst, root+string(filepath.Separator)) { // ValidName already ensures it
		return invalid("entry %q leaves the data directory", name)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return fmt.Errorf("restore %s: %w", name, err)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("restore %s: %w", name, err)
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(out, h), body)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("restore %s: %w", name, err)
	}
	if hex.EncodeToString(h.Sum(nil)) != sum {
		return invalid("%s changed since the archive was verified", name)
	}
	return nil
}

// restrictModes makes every file under root 0600 and every directory 0700.
func restrictModes(root string) error {
	return filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := os.FileMode(0o600)
		if d.IsDir() {
			mode = 0o700
		}
		return os.Chmod(p, mode)
	})
}

// syncTree syncs every directory under root, root included, so that the
// names of the unpacked files are durable.
func syncTree(root string) error {
	return filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return durable.SyncDir(p)
	})
}
