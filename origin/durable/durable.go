package durable

import "os"

// SyncDir flushes dir's entries to stable storage, so that a file created,
// renamed or linked in it keeps its name after a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
