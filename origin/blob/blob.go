package blob

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrNotFound is returned for a file that does not exist.
var ErrNotFound = errors.New("blob not found")

// Store is a directory of per-image folders.
type Store struct{ dir string }

// Open returns the store rooted at dir, creating it.
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
	shard := id
	if len(shard) > 2 {
		shard = id[len(id)-2:] // the random tail of a UUIDv7 spreads evenly
	}
	return filepath.Join(s.dir, shard, id)
}

// Path returns where a file lives (it may not exist).
func (s *Store) Path(id, name string) (string, error) {
	if !valid(id) || !valid(name) {
		return "", fmt.Errorf("blob: invalid key %q/%q", id, name)
	}
	return filepath.Join(s.folder(id), name), nil
}

// Put writes data as id/name atomically and durably.
func (s *Store) Put(id, name string, data []byte) error {
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
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Open opens id/name for reading.
func (s *Store) Open(id, name string) (*os.File, error) {
	path, err := s.Path(id, name)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotFound
	}
	return f, err
}

// Read returns the whole content of id/name.
func (s *Store) Read(id, name string) ([]byte, error) {
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
func (s *Store) Remove(id string) error {
	if !valid(id) {
		return fmt.Errorf("blob: invalid id %q", id)
	}
	if err := os.RemoveAll(s.folder(id)); err != nil {
		return fmt.Errorf("blob remove %s: %w", id, err)
	}
	return nil
}
