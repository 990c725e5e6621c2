package wasm

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// Config sets the sandbox's limits. Zero values are not defaults: start
// from DefaultConfig.
type Config struct {
	// MemoryLimitBytes caps each guest instance's linear memory
	// (rounded down to 64 KiB pages). The Go guest's runtime alone needs
	// a few MiB.
	MemoryLimitBytes uint64
	// Timeout bounds one evaluation, enforced by wazero closing the
	// instance when its context is done.
	Timeout time.Duration
	// CompilationCacheDir keeps wazero's compiled guest on disk, so
	// that a restart does not compile it again; empty keeps it in
	// memory only.
	CompilationCacheDir string
	// MaxTemplateBytes, MaxValuesBytes and MaxOutputBytes cap the
	// template, its JSON values and the rendered output.
	MaxTemplateBytes int
	MaxValuesBytes   int
	MaxOutputBytes   int
	// MaxDepth caps how deeply blocks and subexpressions nest in a
	// template, and arrays and objects in the values.
	MaxDepth int
	// PoolSize is how many instances are kept initialized ahead of
	// time (each used for exactly one evaluation); 0 instantiates on
	// demand only.
	PoolSize int
	// ResetInstances: an instance that finished an evaluation is reset
	// to the snapshot's state in the background (the memory pages it
	// wrote copied back, its globals and clocks restored) and used
	// again, instead of closed. It needs a pool (PoolSize > 0) and
	// Linux's /proc/self/pagemap; without them every instance is used
	// once.
	ResetInstances bool
	// ProgramCacheBytes bounds the cache of compiled programs: a
	// template is parsed by the guest once, and later evaluations hand
	// the guest its program, by the template's SHA-256, least recently
	// used out first. 0 parses every time.
	ProgramCacheBytes int
}

// DefaultConfig returns the limits Pictor runs with.
func DefaultConfig() Config {
	return Config{
		MemoryLimitBytes:  64 << 20,
		Timeout:           time.Second,
		MaxTemplateBytes:  512 << 10,
		MaxValuesBytes:    1 << 20,
		MaxOutputBytes:    4 << 20,
		MaxDepth:          64,
		PoolSize:          4,
		ResetInstances:    true,
		ProgramCacheBytes: 32 << 20,
	}
}

var pageSizeOS = os.Getpagesize()

const (
	pageSize       = 64 << 10
	maxMemoryBytes = 4 << 30
)

// Validate reports the first setting out of range, by its field name.
func (c Config) Validate() error {
	var errs []error
	if c.MemoryLimitBytes < 16<<20 || c.MemoryLimitBytes > maxMemoryBytes {
		errs = append(errs, fmt.Errorf("MemoryLimitBytes: %d is not between 16 MiB and 4 GiB", c.MemoryLimitBytes))
	}
	if c.Timeout <= 0 {
		//lint:ignore ST1005 every message here starts with the field it is about
		errs = append(errs, fmt.Errorf("Timeout: %s is not positive", c.Timeout))
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"MaxTemplateBytes", c.MaxTemplateBytes}, {"MaxValuesBytes", c.MaxValuesBytes}, {"MaxOutputBytes", c.MaxOutputBytes}} {
		if f.v <= 0 || uint64(f.v) >= maxMemoryBytes {
			errs = append(errs, fmt.Errorf("%s: %d is not between 1 and 4 GiB", f.name, f.v))
		}
	}
	if c.MaxDepth < 1 || c.MaxDepth > 10000 {
		errs = append(errs, fmt.Errorf("MaxDepth: %d is not between 1 and 10000", c.MaxDepth))
	}
	if c.ProgramCacheBytes < 0 || uint64(c.ProgramCacheBytes) >= maxMemoryBytes {
		errs = append(errs, fmt.Errorf("ProgramCacheBytes: %d is not between 0 and 4 GiB", c.ProgramCacheBytes))
	}
	if c.PoolSize < 0 || c.PoolSize > 256 {
		errs = append(errs, fmt.Errorf("PoolSize: %d is not between 0 and 256", c.PoolSize))
	}
	return errors.Join(errs...)
}
