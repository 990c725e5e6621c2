package blob

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pictorhq/pictor/origin/durable"
)

// Store is the files store: a directory of per-image folders on the
// origin's disk. Its methods ignore their context (local file operations
// are not cancelable) and it records no checksums: it never returns
// ErrCorrupt or ErrUnavailable.
type Store struct{ dir string }

var _ Blobs = (*Store)(nil)

// Open returns the files store rooted at dir, creating it.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("blob store %s: %w", dir, err)
	}
	return &Store{dir: dir}, nil
}

// valid accepts ids and names that cannot leave their directory.
func valid(s string) bool {
	return s != "" && len(s) <= 128 && !strings.ContainsAny(s, `/\`) && s != "." && s != ".." && !strings.HasPrefix(s, ".")
}

func (s *Store) folder(id string) string {
	return filepath.Join(s.dir, shard(id), id)
}

// shard is the folder (files) or key segment (S3) above an image's own:
// the last two characters of its id, since the random tail of a UUIDv7
// spreads evenly where its time-ordered head would not.
func shard(id string) string {
	if len(id) > 2 {
		return id[len(id)-2:]
	}
	return id
}

// Path returns where a file lives (it may not exist).
func (s *Store) Path(id, name string) (string, error) {
	if !valid(id) || !valid(name) {
		return "", fmt.Errorf("blob: invalid key %q/%q", id, name)
	}
	return filepath.Join(s.folder(id), name), nil
}

// Put writes data as id/name atomically and durably.
func (s *Store) Put(_ context.Context, id, name string, data []byte) error {
	path, err := s.Path(id, name)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("blob put %s/%s: %w", id, name, err)
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("blob put %s/%s: %w", id, name, err)
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("blob put %s/%s: %w", id, name, err)
	}
	return durable.SyncDir(dir)
}

// Open opens id/name for reading. The Object is an *os.File, so that
// copies of it to a connection (http.ServeContent, io.Copy) may use
// sendfile.
func (s *Store) Open(_ context.Context, id, name string) (Object, error) {
	path, err := s.Path(id, name)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Read returns the whole content of id/name.
func (s *Store) Read(_ context.Context, id, name string) ([]byte, error) {
	path, err := s.Path(id, name)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotFound
	}
	return data, err
}

// Remove deletes every file of an image.
func (s *Store) Remove(_ context.Context, id string) error {
	if !valid(id) {
		return fmt.Errorf("blob: invalid id %q", id)
	}
	if err := os.RemoveAll(s.folder(id)); err != nil {
		return fmt.Errorf("blob remove %s: %w", id, err)
	}
	return nil
}

// Close does nothing: the files store holds nothing open.
func (s *Store) Close() error { return nil }
