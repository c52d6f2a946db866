package store

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"drover/coord/id"
)

// base is the time every test record is stamped from.
var base = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// quiet is a logger that drops everything.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func testKey(i int) id.Key {
	return id.Key{Crawler: "c", Processor: "p", URL: fmt.Sprintf("https://example.com/page/%d", i)}
}

func testFP(i int) id.Fingerprint { return testKey(i).Fingerprint() }

func keyRec(i int, st KeyState, at time.Time) KeyRecord {
	return KeyRecord{FP: testFP(i), Key: testKey(i), State: st, At: at}
}

func jobRec(j uint64, st JobState, updated time.Time) JobRecord {
	k := testKey(int(j))
	return JobRecord{
		ID: j, FP: k.Fingerprint(), Key: k, Host: "example.com",
		Headers: map[string]string{"lang": "go", "threads": "4"},
		Payload: []byte(fmt.Sprintf(`{"job":%d}`, j)),
		State:   st, Attempts: 2, Failures: 1, Throttles: 3,
		RetryAt: base.Add(time.Minute), Worker: "w1", LastError: "timeout",
		Created: base, Updated: updated,
		History: []Attempt{
			{Worker: "w0", At: base.Add(time.Second), Outcome: "internal", Error: "timeout"},
			{Worker: "w1", At: base.Add(2 * time.Second)},
		},
	}
}

// openT opens a store and closes it at the end of the test.
func openT(t testing.TB, o Options) *Store {
	t.Helper()
	if o.Log == nil {
		o.Log = quiet
	}
	s, err := Open(o)
	if err != nil {
		t.Fatalf("Open(%+v): %v", o, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func memT(t testing.TB) *Store { return openT(t, Options{Memory: true}) }

// commitT writes one batch built by fill and waits for it.
func commitT(t testing.TB, s *Store, fill func(b *Batch) error) {
	t.Helper()
	b := s.NewBatch()
	if err := fill(b); err != nil {
		t.Fatalf("filling a batch: %v", err)
	}
	if err := s.Commit(b); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

// recoverAll returns every record Recover yields.
func recoverAll(t testing.TB, s *Store) ([]Record, Stats) {
	t.Helper()
	var out []Record
	st, err := s.Recover(func(r Record) error {
		out = append(out, r)
		return nil
	})
	if err != nil {
		t.Fatalf("Recover: %v", err)
	}
	return out, st
}

// countingFS counts fsyncs of write-ahead log files (*.log).
type countingFS struct {
	vfs.FS
	walSyncs atomic.Int64
}

func (c *countingFS) wrap(f vfs.File, name string, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return &countingFile{File: f, fs: c}, nil
}

func (c *countingFS) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := c.FS.Create(name, cat)
	return c.wrap(f, name, err)
}

func (c *countingFS) ReuseForWrite(oldname, newname string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := c.FS.ReuseForWrite(oldname, newname, cat)
	return c.wrap(f, newname, err)
}

func (c *countingFS) OpenReadWrite(name string, cat vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := c.FS.OpenReadWrite(name, cat, opts...)
	return c.wrap(f, name, err)
}

type countingFile struct {
	vfs.File
	fs *countingFS
}

func (f *countingFile) Sync() error {
	f.fs.walSyncs.Add(1)
	return f.File.Sync()
}

func (f *countingFile) SyncData() error {
	f.fs.walSyncs.Add(1)
	return f.File.SyncData()
}

func (f *countingFile) SyncTo(length int64) (bool, error) {
	full, err := f.File.SyncTo(length)
	if full {
		f.fs.walSyncs.Add(1)
	}
	return full, err
}
