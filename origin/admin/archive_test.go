package admin_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/origin/admin"
)

// sampleFiles is a small data directory's worth of files.
var sampleFiles = []struct{ name, body string }{
	{"master.key", "0123abcd\n"},
	{"edge.token", "feed\n"},
	{"kv/000004.sst", strings.Repeat("table", 1000)},
	{"kv/MANIFEST-000001", "manifest"},
	{"images/ef/0190-abef/image.png", "\x89PNG pixels"},
	{"images/ef/0190-abef/document.pdf", "%PDF-1.7"},
}

// sampleArchive writes sampleFiles with ArchiveWriter.
func sampleArchive(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	aw := admin.NewArchiveWriter(&buf)
	for _, f := range sampleFiles {
		if err := aw.Add(f.name, strings.NewReader(f.body), int64(len(f.body))); err != nil {
			t.Fatal(err)
		}
	}
	aw.CountImage()
	m, err := aw.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Files) != len(sampleFiles) || m.Images != 1 || !m.HasMasterKey() {
		t.Fatalf("manifest %+v", m)
	}
	return buf.Bytes()
}

func writeFile(t *testing.T, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "backup.tar.gz")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRestore: every file comes back with its bytes, files 0600 and
// directories 0700, into a new directory or an empty one.
func TestRestore(t *testing.T) {
	archive := writeFile(t, sampleArchive(t))
	for _, tc := range []struct {
		name   string
		target func(parent string) string
	}{
		{"new directory", func(parent string) string { return filepath.Join(parent, "a", "b", "data") }},
		{"empty directory", func(parent string) string {
			d := filepath.Join(parent, "data")
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
			return d
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := tc.target(parent)
			checked := ""
			m, err := admin.Restore(archive, dir, func(d string) error {
				checked = d
				if _, err := os.Stat(filepath.Join(d, "kv", "000004.sst")); err != nil {
					return err
				}
				// As pebble makes its LOCK file, whatever the umask.
				return os.WriteFile(filepath.Join(d, "kv", "LOCK"), nil, 0o644)
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Files) != len(sampleFiles) || m.Images != 1 {
				t.Fatalf("manifest %+v", m)
			}
			if checked == "" || checked == dir {
				t.Fatalf("check ran on %q, want the unpacked directory before it moved", checked)
			}
			for _, f := range sampleFiles {
				got, err := os.ReadFile(filepath.Join(dir, f.name))
				if err != nil || string(got) != f.body {
					t.Fatalf("%s restored as %q (%v)", f.name, got, err)
				}
			}
			err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				fi, _ := d.Info()
				want := fs.FileMode(0o600)
				if d.IsDir() {
					want = 0o700
				}
				if fi.Mode().Perm() != want {
					t.Errorf("%s has mode %v, want %v", p, fi.Mode().Perm(), want)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			assertNoStaging(t, filepath.Dir(dir))
		})
	}
}

// assertNoStaging checks that no unpacked directory was left in parent.
func assertNoStaging(t *testing.T, parent string) {
	t.Helper()
	left, _ := filepath.Glob(filepath.Join(parent, ".pictor-restore-*"))
	if len(left) > 0 {
		t.Fatalf("restore left %v", left)
	}
}

// entry is one entry of a hand-made archive.
type entry struct {
	hdr  tar.Header
	body string
}

func reg(name, body string) entry {
	return entry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(body)), Mode: 0o600}, body: body}
}

// craft writes entries and then a manifest made by edit from the one
// matching them (edit nil: as it is; a nil manifest: none).
func craft(t *testing.T, entries []entry, edit func(*admin.Manifest) *admin.Manifest) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	m := &admin.Manifest{Format: admin.ArchiveFormat, Version: admin.ArchiveVersion}
	for _, e := range entries {
		hdr := e.hdr
		if err := tw.WriteHeader(&hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag == tar.TypeReg {
			tw.Write([]byte(e.body))
			sum := sha256.Sum256([]byte(e.body))
			m.Files = append(m.Files, admin.ManifestFile{Name: hdr.Name, Size: hdr.Size, SHA256: hex.EncodeToString(sum[:])})
		}
	}
	if edit != nil {
		m = edit(m)
	}
	if m != nil {
		raw, _ := json.Marshal(m)
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: admin.ManifestName, Size: int64(len(raw)), Mode: 0o600})
		tw.Write(raw)
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

// TestHostileArchiveRefused: an archive that is damaged, incomplete or names a
// path outside the data directory's layout is refused before anything is
// written; so is a data directory that holds something.
func TestHostileArchiveRefused(t *testing.T) {
	good := sampleArchive(t)
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0xff
	tests := []struct {
		name    string
		archive []byte
		want    string
	}{
		{"truncated in the middle", good[:len(good)/2], "truncated or corrupted"},
		{"truncated at the end", good[:len(good)-5], "truncated or corrupted"},
		{"a flipped byte", flipped, "invalid backup archive"},
		{"empty file", nil, "not a gzip stream"},
		{"not gzip", []byte("PK\x03\x04 a zip file"), "not a gzip stream"},
		{"trailing garbage", append(bytes.Clone(good), "more"...), "truncated or corrupted"},
		{"parent directory", craft(t, []entry{reg("../evil", "x")}, nil), "outside"},
		{"parent inside a path", craft(t, []entry{reg("kv/../../evil", "x")}, nil), "outside"},
		{"absolute path", craft(t, []entry{reg("/etc/cron.d/evil", "x")}, nil), "outside"},
		{"dot segment", craft(t, []entry{reg("kv/./000001.sst", "x")}, nil), "outside"},
		{"hidden file", craft(t, []entry{reg("kv/.evil", "x")}, nil), "outside"},
		{"unknown top-level file", craft(t, []entry{reg("admin.json", "{}")}, nil), "outside"},
		{"image at the wrong depth", craft(t, []entry{reg("images/x/image.png", "x")}, nil), "outside"},
		{"store subdirectory", craft(t, []entry{reg("kv/sub/file", "x")}, nil), "outside"},
		{"backslash", craft(t, []entry{reg(`kv/..\..\evil`, "x")}, nil), "outside"},
		{"symlink", craft(t, []entry{{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: "kv/CURRENT", Linkname: "/etc/passwd"}}}, nil), "not a regular file"},
		{"hard link", craft(t, []entry{reg("master.key", "k"), {hdr: tar.Header{Typeflag: tar.TypeLink, Name: "edge.token", Linkname: "master.key"}}}, nil), "not a regular file"},
		{"directory entry", craft(t, []entry{{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "kv/", Mode: 0o777}}}, nil), "not a regular file"},
		{"duplicate entry", craft(t, []entry{reg("master.key", "a"), reg("master.key", "b")}, nil), "twice"},
		{"no manifest", craft(t, []entry{reg("master.key", "k")}, func(*admin.Manifest) *admin.Manifest { return nil }), "no manifest"},
		{"wrong checksum", craft(t, []entry{reg("master.key", "k")}, func(m *admin.Manifest) *admin.Manifest {
			m.Files[0].SHA256 = strings.Repeat("0", 64)
			return m
		}), "checksum"},
		{"file missing from the archive", craft(t, []entry{reg("master.key", "k")}, func(m *admin.Manifest) *admin.Manifest {
			m.Files = append(m.Files, admin.ManifestFile{Name: "edge.token", Size: 1, SHA256: m.Files[0].SHA256})
			return m
		}), "manifest lists 2 files"},
		{"file missing from the manifest", craft(t, []entry{reg("master.key", "k"), reg("edge.token", "t")}, func(m *admin.Manifest) *admin.Manifest {
			m.Files = m.Files[:1]
			return m
		}), "manifest lists 1 files"},
		{"other version", craft(t, []entry{reg("master.key", "k")}, func(m *admin.Manifest) *admin.Manifest {
			m.Version = 99
			return m
		}), "version 99"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "data")
			archive := writeFile(t, tc.archive)
			checked := false
			_, err := admin.Restore(archive, dir, func(string) error { checked = true; return nil })
			if !errors.Is(err, admin.ErrInvalidArchive) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Restore = %v, want ErrInvalidArchive mentioning %q", err, tc.want)
			}
			if checked {
				t.Fatal("the check ran on a refused archive")
			}
			if entries, _ := os.ReadDir(parent); len(entries) != 0 {
				t.Fatalf("a refused restore left %v", entries)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(parent), "evil")); err == nil {
				t.Fatal("a file was written outside the data directory")
			}
		})
	}

	t.Run("entry after the manifest", func(t *testing.T) {
		raw := craft(t, []entry{reg("master.key", "k")}, nil)
		// Append an entry after the manifest: rebuild with a second tar.
		var buf bytes.Buffer
		gz := gzip.NewWriter(&buf)
		tw := tar.NewWriter(gz)
		zr, _ := gzip.NewReader(bytes.NewReader(raw))
		tr := tar.NewReader(zr)
		for {
			hdr, err := tr.Next()
			if err != nil {
				break
			}
			tw.WriteHeader(hdr)
			b := make([]byte, hdr.Size)
			tr.Read(b)
			tw.Write(b)
		}
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "edge.token", Size: 1, Mode: 0o600})
		tw.Write([]byte("t"))
		tw.Close()
		gz.Close()
		if _, err := admin.Verify(&buf); !errors.Is(err, admin.ErrInvalidArchive) || !strings.Contains(err.Error(), "after the manifest") {
			t.Fatalf("Verify = %v", err)
		}
	})

	t.Run("not empty", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("mine"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := admin.Restore(writeFile(t, good), dir, nil)
		if !errors.Is(err, admin.ErrNotEmpty) || !strings.Contains(err.Error(), "keep.txt") {
			t.Fatalf("Restore into a non-empty directory = %v", err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Fatalf("the directory now holds %v", entries)
		}
		assertNoStaging(t, filepath.Dir(dir))
	})

	t.Run("a file in the way", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "data")
		os.WriteFile(p, nil, 0o600)
		if _, err := admin.Restore(writeFile(t, good), p, nil); err == nil || !strings.Contains(err.Error(), "not a directory") {
			t.Fatalf("Restore onto a file = %v", err)
		}
	})

	t.Run("check fails", func(t *testing.T) {
		parent := t.TempDir()
		_, err := admin.Restore(writeFile(t, good), filepath.Join(parent, "data"), func(string) error { return errors.New("store does not open") })
		if err == nil || !strings.Contains(err.Error(), "store does not open") {
			t.Fatalf("Restore = %v", err)
		}
		if entries, _ := os.ReadDir(parent); len(entries) != 0 {
			t.Fatalf("a failed restore left %v", entries)
		}
	})
}

func TestValidName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"master.key", true},
		{"edge.token", true},
		{"oauth-signing-key.pem", true},
		{"kv/000001.sst", true},
		{"kv/MANIFEST-000001", true},
		{"images/ef/0190-abef/image.png", true},
		{"admin.json", false},
		{"pictor-backup.json", false},
		{"kv", false},
		{"kv/", false},
		{"kv//x", false},
		{"kv/a/b", false},
		{"images/ef/id", false},
		{"images/ef/id/x/y", false},
		{"images/../id/x", false},
		{"chromium/Default/Cookies", false},
		{"wasm-cache/x", false},
		{"edge-cache/x", false},
		{"/master.key", false},
		{"kv/a\x00b", false},
		{"kv/a\nb", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := admin.ValidName(tc.name); got != tc.want {
				t.Fatalf("ValidName(%q) = %v, want %v", tc.name, got, tc.want)
			}
		})
	}
}

// FuzzVerify: no input panics Verify or hangs it, and whatever it accepts
// names only files of a data directory.
func FuzzVerify(f *testing.F) {
	good := sampleArchive(f)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte{})
	f.Add([]byte("\x1f\x8b\x08\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := admin.Verify(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, admin.ErrInvalidArchive) {
				t.Fatalf("Verify = %v, not ErrInvalidArchive", err)
			}
			return
		}
		for _, file := range m.Files {
			if !admin.ValidName(file.Name) {
				t.Fatalf("Verify accepted %q", file.Name)
			}
		}
	})
}
