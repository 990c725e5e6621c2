package cache

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
)

// Config configures Open. The flag names in Validate's errors are the edge's.
type Config struct {
	// Dir is L2's own pebble directory (--cache-dir); never the origin's store.
	Dir string
	// MemBytes is L1's budget in bytes (--cache-mem): body, header bytes,
	// key and a fixed per-entry overhead count against it, and ristretto's
	// MaxCost is exactly this.
	MemBytes int64
	// DiskBytes caps L2's logical size (--cache-disk): the bytes of every
	// record the cache writes. Pebble's files run somewhat larger until
	// compactions drop what was deleted; see the package's eviction notes.
	DiskBytes int64
	// MaxEntryBytes bounds one entry's L2 encoding (--cache-max-entry);
	// larger entries are served uncached (Put returns ErrTooLarge).
	MaxEntryBytes int64
	// Registerer, when set, receives the cache's metrics.
	Registerer prometheus.Registerer

	// fs replaces the operating system's file system in crash tests.
	fs vfs.FS
}

// DefaultConfig returns the defaults of the operator contract.
func DefaultConfig() Config {
	return Config{
		Dir:           "./data/edge-cache",
		MemBytes:      256 << 20,
		DiskBytes:     8 << 30,
		MaxEntryBytes: 64 << 20,
	}
}

// Validate reports the first invalid setting, naming its flag.
func (c *Config) Validate() error {
	switch {
	case c.Dir == "":
		return errors.New("--cache-dir must not be empty")
	case c.MemBytes < 1<<20:
		return fmt.Errorf("--cache-mem %d: want at least 1 MiB", c.MemBytes)
	case c.DiskBytes < 1<<20:
		return fmt.Errorf("--cache-disk %d: want at least 1 MiB", c.DiskBytes)
	case c.MaxEntryBytes <= 0:
		return fmt.Errorf("--cache-max-entry %d: want a positive size", c.MaxEntryBytes)
	case c.MaxEntryBytes > c.DiskBytes/4:
		return fmt.Errorf("--cache-max-entry %d: want at most a quarter of --cache-disk (%d)", c.MaxEntryBytes, c.DiskBytes)
	case c.MaxEntryBytes > maxBodyLen:
		return fmt.Errorf("--cache-max-entry %d: want at most %d", c.MaxEntryBytes, int64(maxBodyLen))
	}
	return nil
}
