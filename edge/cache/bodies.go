package cache

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"strconv"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// L2 keeps each body in a file of its own, beside pebble, which keeps only
// the index and the metadata:
//
//	<Dir>/bodies/<xx>/<16 hex digits>
//
// The name is a number no other Put used (xx its low byte, so that no
// directory holds more than a 256th of the files); a file is written once,
// synced, and only then named by the batch that commits its entry, so a
// value record never names a torn or missing file after a crash, only
// files whose directory entry was lost with it (Open drops those records).
// A rewrite of a key writes a new file and removes the old one after its
// commit; purges, evictions and deletes remove files after theirs. A crash
// in between leaves files no record names: Open removes them. Hits answer
// from the file (Cache.OpenBody: pread, or sendfile for a long body); a
// sample of those on bodies up to memoryMax read it into L1.
//
// The numbers are not content hashes: two keys with identical bodies keep
// two files, so that a purge never has to count references.
const (
	bodiesDir = "bodies"
	// fileBlock is what a body's size is rounded up to against DiskBytes.
	fileBlock = 4096
)

// bodyFiles is L2's directory of body files.
type bodyFiles struct {
	fs   vfs.FS
	osFS bool // fs is the operating system's: files open as raw descriptors, which SendTo can sendfile from
	root string
	next atomic.Uint64 // the next file number
	// dirty marks the directories with files created since their last
	// sync; a purge and Close sync them before pebble's log.
	dirty [256]atomic.Bool
	// beforeSync, when set (tests), runs between a file's write and its sync.
	beforeSync func()

	// handles keeps files open for the hits that read or send them, as
	// nginx's open_file_cache does: a direct-mapped table by file number,
	// so the files open at once are bounded by its size.
	handles []atomic.Pointer[fileHandle]
	// closed: closeHandles ran, and the table keeps no handle opened since.
	closed atomic.Bool
}

func openBodyFiles(fsys vfs.FS, dir string, osFS bool) (*bodyFiles, error) {
	n := handleSlots()
	b := &bodyFiles{fs: fsys, osFS: osFS, root: fsys.PathJoin(dir, bodiesDir),
		handles: make([]atomic.Pointer[fileHandle], n)}
	for i := range 256 {
		if err := fsys.MkdirAll(b.dir(byte(i)), 0o700); err != nil {
			return nil, fmt.Errorf("create cache body directory: %w", err)
		}
	}
	// The directories themselves survive a crash.
	for _, d := range []string{b.root, dir} {
		if err := syncDir(fsys, d); err != nil {
			return nil, err
		}
	}
	b.next.Store(1)
	return b, nil
}

func syncDir(fsys vfs.FS, name string) error {
	d, err := fsys.OpenDir(name)
	if err == nil {
		err = d.Sync()
		if cerr := d.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("sync cache directory: %w", err)
	}
	return nil
}

const hexDigits = "0123456789abcdef"

func (b *bodyFiles) dir(low byte) string {
	return b.fs.PathJoin(b.root, string([]byte{hexDigits[low>>4], hexDigits[low&15]}))
}

func (b *bodyFiles) path(n uint64) string {
	var name [16]byte
	for i, v := len(name)-1, n; i >= 0; i, v = i-1, v>>4 {
		name[i] = hexDigits[v&15]
	}
	return b.fs.PathJoin(b.dir(byte(n)), string(name[:]))
}

// appendPath appends path(n) to dst, as the operating system's file
// system spells it, without allocating: a hit that opens its body's file
// builds the name on its stack.
func (b *bodyFiles) appendPath(dst []byte, n uint64) []byte {
	dst = append(dst, b.root...)
	dst = append(dst, '/', hexDigits[byte(n)>>4], hexDigits[byte(n)&15], '/')
	for shift := 60; shift >= 0; shift -= 4 {
		dst = append(dst, hexDigits[n>>uint(shift)&15])
	}
	return dst
}

// write stores body as a new file, synced, and returns its number.
func (b *bodyFiles) write(body []byte) (uint64, error) {
	n := b.next.Add(1) - 1
	name := b.path(n)
	f, err := b.fs.Create(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		return 0, fmt.Errorf("create body file: %w", err)
	}
	if !b.osFS {
		// pebble's MemFS (crash tests) scribbles on what it was given to
		// write when its invariants are on (race builds); L1 shares body.
		body = bytes.Clone(body)
	}
	_, err = f.Write(body)
	if b.beforeSync != nil {
		b.beforeSync()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	b.dirty[byte(n)].Store(true)
	if err != nil {
		b.remove(n)
		return 0, fmt.Errorf("write body file: %w", err)
	}
	return n, nil
}

// syncDirs makes the files created so far survive a crash with their
// names.
func (b *bodyFiles) syncDirs() error {
	for i := range b.dirty {
		if !b.dirty[i].Swap(false) {
			continue
		}
		if err := syncDir(b.fs, b.dir(byte(i))); err != nil {
			b.dirty[i].Store(true)
			return err
		}
	}
	return nil
}

// remove deletes file n; one already gone is no error.
func (b *bodyFiles) remove(n uint64) {
	b.forget(n)
	if err := b.fs.Remove(b.path(n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		slog.Warn("edge cache body file not removed", "err", err)
	}
}

// handle returns an acquired handle on e's body file: the table's, or one
// it opens and puts there. A file that is gone (a purge or an eviction
// removed it since the Get) is fs.ErrNotExist; one of another length is
// ErrCorrupt. The caller releases it.
func (b *bodyFiles) handle(e *Entry) (*fileHandle, error) {
	slot := b.slot(e.file)
	if h := slot.Load(); h != nil && h.n == e.file && h.acquire() {
		return h, nil
	}
	f, err := b.openFile(e.file, e.size)
	if err != nil {
		return nil, err
	}
	h := &fileHandle{n: e.file, f: f}
	h.refs.Store(2) // the table's and the caller's
	if old := slot.Swap(h); old != nil {
		old.release()
	}
	// After Close (an answer still under way), the caller's reference is
	// the only one: closeHandles, which set closed before it swept the
	// table, has either swept h or left it to this check.
	if b.closed.Load() && slot.CompareAndSwap(h, nil) {
		h.release()
	}
	return h, nil
}

// slot is file n's place in the handle table. File numbers are given in
// sequence, so consecutive files never share one.
func (b *bodyFiles) slot(n uint64) *atomic.Pointer[fileHandle] {
	return &b.handles[n%uint64(len(b.handles))]
}

// forget drops file n's handle from the table; answers sending it keep
// theirs until they are done.
func (b *bodyFiles) forget(n uint64) {
	slot := b.slot(n)
	if h := slot.Load(); h != nil && h.n == n && slot.CompareAndSwap(h, nil) {
		h.release()
	}
}

// closeHandles releases every handle of the table (Close).
func (b *bodyFiles) closeHandles() {
	b.closed.Store(true)
	for i := range b.handles {
		if h := b.handles[i].Swap(nil); h != nil {
			h.release()
		}
	}
}

// openFile opens body file n, of size bytes, for reading.
func (b *bodyFiles) openFile(n uint64, size int) (readerAtCloser, error) {
	if b.osFS {
		// os.Open would also register the file with the poller and set it
		// non-blocking, system calls a regular file does not need.
		var buf [256]byte
		name := b.appendPath(buf[:0], n)
		fd, err := openRead(name)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: string(name), Err: err}
		}
		if got, err := fileSize(fd); err != nil || got != int64(size) {
			closeFD(fd)
			if err == nil {
				return nil, fmt.Errorf("%w: body file of %d bytes, want %d", ErrCorrupt, got, size)
			}
			return nil, &fs.PathError{Op: "fstat", Path: string(name), Err: err}
		}
		return osFD(fd), nil
	}
	f, err := b.fs.Open(b.path(n))
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || st.Size() != int64(size) {
		f.Close()
		if err == nil {
			err = fmt.Errorf("%w: body file of %d bytes, want %d", ErrCorrupt, st.Size(), size)
		}
		return nil, err
	}
	return f, nil
}

// read returns e's body, checked against its length and checksum.
func (b *bodyFiles) read(e *Entry) ([]byte, error) {
	h, err := b.handle(e)
	if err != nil {
		return nil, err
	}
	defer h.release()
	body := make([]byte, e.size+1) // one more byte to see a longer file
	n, err := h.f.ReadAt(body, 0)
	ended := errors.Is(err, io.EOF)
	if n != e.size || !ended {
		if err == nil || ended {
			err = fmt.Errorf("%w: body file is not %d bytes long", ErrCorrupt, e.size)
		}
		return nil, err
	}
	body = body[:n:n]
	if crc32.Checksum(body, castagnoli) != e.sum {
		return nil, fmt.Errorf("%w: body checksum", ErrCorrupt)
	}
	return body, nil
}

// list calls found with the number of every file under bodies/, and
// removes what is not a body file's name.
func (b *bodyFiles) list(found func(n uint64)) error {
	for i := range 256 {
		dir := b.dir(byte(i))
		names, err := b.fs.List(dir)
		if err != nil {
			return fmt.Errorf("list cache bodies: %w", err)
		}
		for _, name := range names {
			n, err := strconv.ParseUint(name, 16, 64)
			if err != nil || len(name) != 16 || n == 0 || byte(n) != byte(i) {
				if err := b.fs.RemoveAll(b.fs.PathJoin(dir, name)); err != nil {
					return fmt.Errorf("remove stray cache file: %w", err)
				}
				continue
			}
			found(n)
		}
	}
	return nil
}
