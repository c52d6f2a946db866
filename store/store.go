// Package store is drover's embedded durable store (Pebble): the ledger's
// queued and done keys, every broker job with its counters and history
// summary, and a few named counters, so that a coordinator crash loses
// nothing it acknowledged.
//
// Writes are batched by the caller (NewBatch, PutKey, PutJob, ...) and
// handed to Apply, which returns at once; one writer goroutine collects the
// batches that arrive together, writes them as one Pebble batch (group
// commit) and calls each batch's done function once the write is durable
// under the sync policy:
//
//   - SyncAlways: the write-ahead log is fsync'd before done is called.
//   - SyncBatch: the log is fsync'd every SyncInterval while writes are
//     pending; done is called after the fsync that covers the batch.
//   - SyncNone: done is called once the write is in Pebble (it survives a
//     clean Close, not necessarily a crash).
//
// On start, Recover returns everything persisted so the coordinator can
// rebuild its indexes; LookupKey answers for keys the coordinator no longer
// keeps in memory (table-level bloom filters make a miss cheap); Sweep
// expires done and failed records past their TTL in small steps that
// interleave with writes.
//
// Open locks the directory: a second Open, from this process or another,
// fails with ErrLocked naming the holder. A directory whose store cannot be
// read back fails with ErrCorrupt, one that cannot hold a store with
// ErrUnusable: the store never silently starts afresh over existing data.
//
// A store carries its format version. Open upgrades a store of an older
// version it reads (version 1, written by drovers before the grouped
// expiry entries, becomes 2) and refuses a newer one with ErrUnusable
// naming the version; an older drover likewise refuses a store this one
// has upgraded.
package store

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Sync is the durability policy of writes (config key store.sync).
type Sync string

// The sync policies.
const (
	SyncAlways Sync = "always" // fsync before every acknowledgement (group commit shares fsyncs)
	SyncBatch  Sync = "batch"  // fsync every SyncInterval; acknowledgements wait for it
	SyncNone   Sync = "none"   // acknowledge once written; no fsync until Close
)

// ParseSync checks a policy name ("always", "batch" or "none").
func ParseSync(s string) (Sync, error) {
	switch p := Sync(s); p {
	case SyncAlways, SyncBatch, SyncNone:
		return p, nil
	}
	return "", fmt.Errorf("store sync policy %q: want always, batch or none", s)
}

// The defaults of Options.
const (
	DefaultSync         = SyncBatch
	DefaultSyncInterval = 10 * time.Millisecond
	DefaultCacheBytes   = 64 << 20
	// DefaultMemTableBytes is Options.MemTableBytes' default.
	DefaultMemTableBytes = 32 << 20
)

// Options configure Open. Zero fields take the documented defaults.
type Options struct {
	// Path is the store's directory. It is created when missing; an
	// existing directory must be empty or hold a store.
	Path string
	// Memory keeps everything in RAM (Pebble's in-memory file system), for
	// tests and throwaway crawls: Path and Sync are ignored and nothing
	// survives Close.
	Memory bool
	// Sync is the durability policy. Default SyncBatch.
	Sync Sync
	// SyncInterval is SyncBatch's fsync period. Default 10 ms.
	SyncInterval time.Duration
	// CacheBytes sizes Pebble's block cache (index, filter and data
	// blocks). Default 64 MiB.
	CacheBytes int64
	// MemTableBytes sizes each of Pebble's memtables (C memory, like the
	// block cache; the cache reserves room for three on top of
	// CacheBytes, which blocks use while the memtables do not). Default
	// 32 MiB.
	MemTableBytes int64
	// Log receives Pebble's errors and warnings (its routine lines at debug
	// level). Default slog.Default().
	Log *slog.Logger

	fs vfs.FS // tests: the file system under Path (default vfs.Default)
}

// validate fills defaults and checks every field, naming the bad one.
func (o *Options) validate() error {
	var errs []error
	if !o.Memory && o.Path == "" {
		errs = append(errs, errors.New("store options: Path is empty; want a directory (or Memory)"))
	}
	if o.Sync == "" {
		o.Sync = DefaultSync
	} else if _, err := ParseSync(string(o.Sync)); err != nil {
		errs = append(errs, fmt.Errorf("store options: %w", err))
	}
	switch {
	case o.SyncInterval == 0:
		o.SyncInterval = DefaultSyncInterval
	case o.SyncInterval < 0:
		errs = append(errs, fmt.Errorf("store options: SyncInterval %v: want > 0 (or 0 for the default %v)", o.SyncInterval, DefaultSyncInterval))
	}
	switch {
	case o.CacheBytes == 0:
		o.CacheBytes = DefaultCacheBytes
	case o.CacheBytes < 0:
		errs = append(errs, fmt.Errorf("store options: CacheBytes %d: want > 0 (or 0 for the default %d)", o.CacheBytes, DefaultCacheBytes))
	}
	switch {
	case o.MemTableBytes == 0:
		o.MemTableBytes = DefaultMemTableBytes
	case o.MemTableBytes < 1<<20 || o.MemTableBytes > 1<<30:
		errs = append(errs, fmt.Errorf("store options: MemTableBytes %d: want 1 MiB to 1 GiB (or 0 for the default %d)", o.MemTableBytes, DefaultMemTableBytes))
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Memory {
		o.Sync = SyncNone
	}
	return errors.Join(errs...)
}

// Store is an open store. Its methods are safe for concurrent use.
type Store struct {
	opts  Options
	path  string // absolute; "" in memory
	db    *pebble.DB
	lock  *pebble.Lock
	epoch uint64
	// groups numbers the grouped expiry entries written since Open
	// (groupIdent).
	groups atomic.Uint64
	// openedClean: the Open before this one ended with MarkClean (clean.go).
	openedClean atomic.Bool

	realPath string // the path without symlinks, as registered in openPaths; "" if not

	mu     sync.Mutex // guards closed and the Add side of active
	closed bool
	active sync.WaitGroup // calls in progress; Close waits for them

	reqs   chan request
	exited chan struct{}
	failed atomic.Pointer[error] // sticky write failure
	stats  writeCounters

	results resultIndex // TrimResults' memory (resultindex.go)
}

// openPaths holds the absolute paths of the stores open in this process
// on the real file system: Pebble's fcntl lock does not stop a second Open
// from the same process.
var openPaths sync.Map

// OpenMemory opens an empty in-memory store with default options.
func OpenMemory() (*Store, error) { return Open(Options{Memory: true}) }

// Open opens (or creates) the store described by opts, takes its lock and
// starts its writer goroutine. Errors wrap ErrLocked, ErrCorrupt or
// ErrUnusable where they apply. Each Open increments the store's epoch.
func Open(opts Options) (*Store, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	s := &Store{opts: opts}
	var err error
	if opts.Memory {
		err = s.openMemory()
	} else {
		err = s.openDisk()
	}
	if err != nil {
		return nil, err
	}
	s.reqs = make(chan request, 1024)
	s.exited = make(chan struct{})
	go s.run()
	return s, nil
}

// memTableReserve is how many memtables Pebble may charge to the block
// cache at once (the active one, one being flushed and one queued).
const memTableReserve = 3

// pebbleOptions are the Pebble options shared by disk and memory stores.
func (s *Store) pebbleOptions(fs vfs.FS) *pebble.Options {
	mt := s.opts.MemTableBytes
	po := &pebble.Options{
		FS: fs,
		// Pebble charges its memtables to the block cache: with a cache no
		// larger than the memtables (a 64 MiB cache, two 32 MiB memtables)
		// nothing is ever cached and every lookup reads its filter block
		// from disk (~20 µs instead of ~2). The memtables' share comes on
		// top of CacheBytes.
		CacheSize:          s.opts.CacheBytes + memTableReserve*mt,
		MemTableSize:       uint64(mt),
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             pebbleLogger{s.opts.Log},
		EventListener:      eventListener(s.opts.Log),
	}
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10) // ~1% false positives
	}
	return po
}

func (s *Store) openMemory() error {
	db, err := pebble.Open("store", s.pebbleOptions(vfs.NewMem()))
	if err != nil {
		return fmt.Errorf("store: open in memory: %w", err)
	}
	s.db = db
	if err := s.initialise(true); err != nil {
		_ = db.Close()
		return err
	}
	return nil
}

func (s *Store) openDisk() (err error) {
	path, err := filepath.Abs(s.opts.Path)
	if err != nil {
		return fmt.Errorf("store %s: %w: %w", s.opts.Path, ErrUnusable, err)
	}
	s.path = path
	fsys := s.opts.fs
	if fsys == nil {
		fsys = privateFS{vfs.Default}
	}
	fresh, err := prepareDir(fsys, path)
	if err != nil {
		return err
	}
	if s.opts.fs == nil {
		if err := narrowDir(path); err != nil {
			return fmt.Errorf("store %s: %w: cannot make the directory private (mode 0700): %w", path, ErrUnusable, err)
		}
	}
	if s.opts.fs == nil {
		// One name per directory, whatever symlinks led to it.
		if real, err := filepath.EvalSymlinks(path); err == nil {
			s.realPath = real
		} else {
			s.realPath = path
		}
		if _, loaded := openPaths.LoadOrStore(s.realPath, true); loaded {
			return fmt.Errorf("store %s: %w: already open in this process (pid %d)", path, ErrLocked, os.Getpid())
		}
		defer func() {
			if err != nil {
				openPaths.Delete(s.realPath)
				s.realPath = ""
			}
		}()
	}
	lock, err := pebble.LockDirectory(path, fsys)
	if err != nil {
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			return fmt.Errorf("store %s: %w: cannot create its lock file: %w", path, ErrUnusable, err)
		}
		holder := lockHolder(filepath.Join(path, "LOCK"))
		if holder == "" {
			holder = "another process"
		}
		return fmt.Errorf("store %s: %w: held by %s (%v); stop it or choose another store", path, ErrLocked, holder, err)
	}
	defer func() {
		if err != nil {
			_ = lock.Close()
		}
	}()
	exists, err := checkContents(fsys, path)
	if err != nil {
		return err
	}
	po := s.pebbleOptions(fsys)
	po.Lock = lock
	po.ErrorIfNotExists = exists
	db, err := pebble.Open(path, po)
	if err != nil {
		return classifyOpen(path, exists, err)
	}
	s.db, s.lock = db, lock
	if err := s.initialise(fresh || !exists); err != nil {
		_ = db.Close()
		s.db, s.lock = nil, nil
		return err
	}
	return nil
}

// prepareDir makes sure path is a directory, creating it when missing
// (fresh is then true).
func prepareDir(fsys vfs.FS, path string) (fresh bool, err error) {
	fi, err := fsys.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := fsys.MkdirAll(path, dirMode); err != nil {
			return false, fmt.Errorf("store %s: %w: cannot create the directory: %w", path, ErrUnusable, err)
		}
		return true, nil
	case err != nil:
		return false, fmt.Errorf("store %s: %w: %w", path, ErrUnusable, err)
	case !fi.IsDir():
		return false, fmt.Errorf("store %s: %w: it is a file, want a directory", path, ErrUnusable)
	}
	return false, nil
}

// checkContents reports whether path holds a Pebble database, and refuses
// a directory that holds data files without one (a lost manifest marker:
// opening would start afresh and discard them) or unrelated files.
func checkContents(fsys vfs.FS, path string) (exists bool, err error) {
	ls, err := fsys.List(path)
	if err != nil {
		return false, fmt.Errorf("store %s: %w: cannot list the directory: %w", path, ErrUnusable, err)
	}
	desc, err := pebble.Peek(path, fsys)
	if err != nil {
		return false, fmt.Errorf("store %s: %w: cannot read its markers: %w", path, ErrCorrupt, err)
	}
	if desc.Exists {
		return true, nil
	}
	for _, name := range ls {
		switch {
		case strings.HasSuffix(name, ".sst"), strings.HasSuffix(name, ".log"), strings.HasSuffix(name, ".blob"):
			return false, fmt.Errorf("store %s: %w: data file %s but no current manifest (want a marker.manifest.* file naming one)", path, ErrCorrupt, name)
		case name == "LOCK", strings.HasPrefix(name, "OPTIONS-"), strings.HasPrefix(name, "MANIFEST-"),
			strings.HasPrefix(name, "marker."), strings.HasSuffix(name, ".dbtmp"):
			// Left by a creation that did not finish: Pebble starts over.
		default:
			return false, fmt.Errorf("store %s: %w: the directory is not empty (%s) and holds no store; want an empty directory or an existing store", path, ErrUnusable, name)
		}
	}
	return false, nil
}

// classifyOpen wraps an error of pebble.Open.
func classifyOpen(path string, exists bool, err error) error {
	switch {
	case pebble.IsCorruptionError(err):
		return fmt.Errorf("store %s: %w: %w", path, ErrCorrupt, pebbleError{err})
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("store %s: %w: %w", path, ErrUnusable, pebbleError{err})
	case exists:
		// An existing store that Pebble cannot load (a manifest that does
		// not parse, a missing table, an unreadable file).
		return fmt.Errorf("store %s: %w: cannot be opened: %w", path, ErrCorrupt, pebbleError{err})
	}
	return fmt.Errorf("store %s: %w: %w", path, ErrUnusable, pebbleError{err})
}

// initialise checks (or, in a new store, writes; in an older one,
// upgrades) the format version and bumps the epoch, durably.
func (s *Store) initialise(fresh bool) error {
	where := s.where()
	v, ok, err := s.getUint64(internalKey(internalFormat))
	if err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	switch {
	case ok && v > formatVersion:
		return fmt.Errorf("store %s: %w: format version %d, want at most %d (written by a newer drover version)", where, ErrUnusable, v, formatVersion)
	case ok && v < oldestFormat:
		return fmt.Errorf("store %s: %w: format version %d, want %d to %d (written by another drover version)", where, ErrUnusable, v, oldestFormat, formatVersion)
	case ok && v < formatVersion:
		// Upgrade: this code reads the older layouts; the new version is
		// written with the epoch, so an older drover refuses the store
		// from the moment it may hold the new ones.
		s.opts.Log.Info("store: upgrading the format", "path", where, "from", v, "to", formatVersion)
		_ = b.Set(internalKey(internalFormat), be64(formatVersion), nil)
	case !ok:
		if !fresh {
			empty, err := s.empty()
			if err != nil {
				return fmt.Errorf("store %s: look for keys: %w", where, err)
			}
			if !empty {
				return fmt.Errorf("store %s: %w: a Pebble database without a drover format version; want a drover store", where, ErrUnusable)
			}
		}
		_ = b.Set(internalKey(internalFormat), be64(formatVersion), nil)
	}
	epoch, _, err := s.getUint64(internalKey(internalEpoch))
	if err != nil {
		return err
	}
	clean, marked, err := s.getUint64(internalKey(internalClean))
	if err != nil {
		return err
	}
	s.openedClean.Store(marked && clean == epoch && epoch > 0) // clean.go
	s.epoch = epoch + 1
	_ = b.Set(internalKey(internalEpoch), be64(s.epoch), nil)
	if err := s.db.Apply(b, pebble.Sync); err != nil {
		return fmt.Errorf("store %s: write the epoch: %w", where, corrupt(err))
	}
	return nil
}

// empty reports whether the database holds no key at all.
func (s *Store) empty() (bool, error) {
	it, err := s.db.NewIter(nil)
	if err != nil {
		return false, corrupt(err)
	}
	found := it.First()
	if err := it.Close(); err != nil {
		return false, corrupt(err)
	}
	return !found, nil
}

// Epoch is the number of times the store has been opened, this Open
// included: 1 for a new store. It is persisted before Open returns.
func (s *Store) Epoch() uint64 { return s.epoch }

// Path is the store's absolute directory, "" for a memory store.
func (s *Store) Path() string { return s.path }

// SyncPolicy is the policy writes are acknowledged under (SyncNone for a
// memory store).
func (s *Store) SyncPolicy() Sync { return s.opts.Sync }

// enter registers a call in progress; it fails once Close has begun.
func (s *Store) enter() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.active.Add(1)
	return nil
}

func (s *Store) leave() { s.active.Done() }

// Close waits for calls in progress, writes and syncs every batch applied
// before it (their done functions are called), closes Pebble and releases
// the lock. Apply after Close calls done with ErrClosed; other methods
// return ErrClosed. Close is idempotent: later calls return nil.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.active.Wait()
	close(s.reqs)
	<-s.exited
	err := s.closeDB()
	if s.lock != nil {
		if lerr := s.lock.Close(); lerr != nil && err == nil {
			err = fmt.Errorf("store %s: release the lock: %w", s.path, lerr)
		}
	}
	if s.realPath != "" {
		openPaths.Delete(s.realPath)
	}
	return err
}

// closeDB closes Pebble, turning a panic of a store Pebble already gave up
// on into an error.
func (s *Store) closeDB() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("store %s: close after a fatal error: %v", s.path, r)
		}
	}()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("store %s: close: %w", s.path, err)
	}
	if p := s.failed.Load(); p != nil {
		return *p
	}
	return nil
}
