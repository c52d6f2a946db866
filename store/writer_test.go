package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Concurrent Apply calls under SyncAlways share fsyncs: far fewer WAL syncs
// than batches.
func TestGroupCommitSharesFsyncs(t *testing.T) {
	cfs := &countingFS{FS: vfs.Default}
	s := openT(t, Options{Path: t.TempDir(), Sync: SyncAlways, fs: cfs})
	const n = 400
	before, stats0 := cfs.walSyncs.Load(), s.WriteStats()
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r := keyRec(i, KeyDone, base)
			b := s.NewBatch()
			_ = b.PutKey(&r)
			errs <- s.Commit(b)
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Commit: %v", err)
		}
	}
	syncs := cfs.walSyncs.Load() - before
	st := s.WriteStats()
	commits := st.Commits - stats0.Commits
	t.Logf("%d concurrent Commit calls under sync=always: %d WAL fsyncs, %d Pebble commits", n, syncs, commits)
	if syncs == 0 || syncs > n/4 {
		t.Errorf("%d batches took %d WAL fsyncs; want at least 1 and at most %d (group commit)", n, syncs, n/4)
	}
	if commits > n/4 || st.Batches-stats0.Batches != n {
		t.Errorf("commits %d, batches %d; want at most %d commits for %d batches", commits, st.Batches-stats0.Batches, n/4, n)
	}
	if _, st := recoverAll(t, s); st.KeysDone != n {
		t.Errorf("recovered %d done keys, want %d", st.KeysDone, n)
	}
}

// Each policy calls done only once the batch is as durable as it promises:
// the WAL fsync count seen inside done has moved past the count at Apply
// (always, batch) or not (none).
func TestAckFollowsTheSyncPolicy(t *testing.T) {
	for _, tc := range []struct {
		policy     Sync
		wantSynced bool
	}{
		{SyncAlways, true},
		{SyncBatch, true},
		{SyncNone, false},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			cfs := &countingFS{FS: vfs.NewMem()}
			s := openT(t, Options{Path: "/db", Sync: tc.policy, SyncInterval: time.Millisecond, fs: cfs})
			for i := range 20 {
				r := keyRec(i, KeyDone, base)
				b := s.NewBatch()
				_ = b.PutKey(&r)
				at := cfs.walSyncs.Load()
				ch := make(chan int64, 1)
				s.Apply(b, func(err error) {
					if err != nil {
						t.Errorf("batch %d: %v", i, err)
					}
					ch <- cfs.walSyncs.Load()
				})
				if got := <-ch; (got > at) != tc.wantSynced {
					t.Fatalf("batch %d: WAL fsyncs %d at Apply, %d at done; want synced before done = %v", i, at, got, tc.wantSynced)
				}
			}
		})
	}
}

// Under SyncBatch acknowledgements wait for the interval's fsync, and every
// batch written meanwhile shares it; Close syncs what is pending.
func TestBatchPolicyAcksWaitForTheSync(t *testing.T) {
	cfs := &countingFS{FS: vfs.NewMem()}
	s, err := Open(Options{Path: "/db", Sync: SyncBatch, SyncInterval: time.Hour, fs: cfs, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	before := cfs.walSyncs.Load()
	const n = 100
	var acked atomic.Int32
	var early atomic.Int32 // acks that saw no fsync since Apply
	for i := range n {
		r := keyRec(i, KeyDone, base)
		b := s.NewBatch()
		_ = b.PutKey(&r)
		s.Apply(b, func(err error) {
			if err != nil {
				t.Errorf("batch: %v", err)
			}
			if cfs.walSyncs.Load() == before {
				early.Add(1)
			}
			acked.Add(1)
		})
	}
	if err := s.do(func(*writer) {}); err != nil { // every batch is written by now
		t.Fatal(err)
	}
	if a, syncs := acked.Load(), cfs.walSyncs.Load()-before; a != 0 || syncs != 0 {
		t.Fatalf("before the interval: %d acks, %d fsyncs; want none", a, syncs)
	}
	if st, _, ok, err := s.LookupKey(testFP(n - 1)); err != nil || !ok || st != KeyDone {
		t.Errorf("written but unsynced batch not readable: %v %v %v", st, ok, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if a, e := acked.Load(), early.Load(); a != n || e != 0 {
		t.Errorf("after Close: %d acks, %d of them before any fsync; want %d and 0", a, e, n)
	}
	if st := s.WriteStats(); st.Syncs != 1 {
		t.Errorf("WriteStats %+v: want 1 sync for the %d batches", st, n)
	}
}

// Acknowledged batches survive a simulated power cut (only fsync'd data
// kept) under always and batch; under none the same check catches loss.
func TestAckedBatchesSurviveACrash(t *testing.T) {
	for _, tc := range []struct {
		policy   Sync
		lossless bool
	}{
		{SyncAlways, true},
		{SyncBatch, true},
		{SyncNone, false},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			mem := vfs.NewCrashableMem()
			s := openT(t, Options{Path: "/db", Sync: tc.policy, fs: mem}) // batch: every 10 ms
			// 4 writers, at most 64 batches in flight each, 6000 in all;
			// crashes after 4 random numbers of Apply calls, wherever the
			// writer is between fsyncs.
			const writers, each, inflight = 4, 1500, 64
			var applied [writers * each]atomic.Int64 // Apply time, unix ns
			var acks, sent ackLog
			var stop atomic.Bool
			var wg sync.WaitGroup
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sem := make(chan struct{}, inflight)
					for k := range each {
						if stop.Load() {
							return
						}
						i := k*writers + w
						r := keyRec(i, KeyDone, base)
						b := s.NewBatch()
						_ = b.PutKey(&r)
						sem <- struct{}{}
						applied[i].Store(time.Now().UnixNano())
						s.Apply(b, func(err error) {
							<-sem
							if err == nil {
								acks.add(i)
							}
						})
						sent.add(i)
					}
				}()
			}
			rng := rand.New(rand.NewPCG(1, 2))
			points := []int{rng.IntN(1500), 1500 + rng.IntN(1500), 3000 + rng.IntN(1500), 4500 + rng.IntN(1400)}
			lost := 0
			for crash, at := range points {
				if !sent.waitFor(at, 20*time.Second) {
					t.Fatalf("crash %d: %d Apply calls in 20s, want %d", crash, sent.len(), at)
				}
				snap := acks.snapshot()
				crashAt := time.Now().UnixNano()
				clone := mem.CrashClone(vfs.CrashCloneCfg{})
				c, err := Open(Options{Path: "/db", fs: clone, Log: quiet})
				if err != nil {
					t.Fatalf("crash %d: reopen: %v", crash, err)
				}
				have := map[[16]byte]bool{}
				if _, err := c.Recover(func(r Record) error { have[r.Key.FP] = true; return nil }); err != nil {
					t.Fatalf("crash %d: recover: %v", crash, err)
				}
				_ = c.Close()
				for _, i := range snap {
					if !have[testFP(i)] {
						lost++
					}
				}
				// What was applied before the crash but not recovered, and
				// how long before the crash its Apply was.
				unsynced, oldest := 0, time.Duration(0)
				for i := range applied {
					if at := applied[i].Load(); at != 0 && at < crashAt && !have[testFP(i)] {
						unsynced++
						oldest = max(oldest, time.Duration(crashAt-at))
					}
				}
				t.Logf("crash %d: %d acknowledged, %d recovered; %d applied but lost, the oldest applied %v before the crash",
					crash, len(snap), len(have), unsynced, oldest.Round(time.Microsecond))
			}
			stop.Store(true)
			wg.Wait()
			if tc.lossless && lost > 0 {
				t.Errorf("%d acknowledged batches lost in simulated crashes under sync=%s", lost, tc.policy)
			}
			if !tc.lossless && lost == 0 {
				t.Errorf("no acknowledged batch lost under sync=none; the crash check is not biting")
			}
		})
	}
}

// ackLog collects acknowledged ids and wakes a waiter when there are
// enough.
type ackLog struct {
	mu      sync.Mutex
	ids     []int
	target  int
	reached chan struct{}
}

func (a *ackLog) add(i int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ids = append(a.ids, i)
	if a.reached != nil && len(a.ids) >= a.target {
		close(a.reached)
		a.reached = nil
	}
}

func (a *ackLog) len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.ids)
}

func (a *ackLog) snapshot() []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]int(nil), a.ids...)
}

// waitFor waits until n ids were added, or timeout.
func (a *ackLog) waitFor(n int, timeout time.Duration) bool {
	a.mu.Lock()
	if len(a.ids) >= n {
		a.mu.Unlock()
		return true
	}
	ch := make(chan struct{})
	a.target, a.reached = n, ch
	a.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-time.After(timeout):
		return false
	}
}

func TestDoneCalledInApplyOrder(t *testing.T) {
	for _, p := range []Sync{SyncAlways, SyncBatch, SyncNone} {
		t.Run(string(p), func(t *testing.T) {
			s := openT(t, Options{Path: "/db", Sync: p, SyncInterval: time.Millisecond, fs: vfs.NewMem()})
			var order []int
			var mu sync.Mutex
			done := make(chan struct{})
			const n = 300
			for i := range n {
				r := keyRec(i, KeyQueued, base)
				b := s.NewBatch()
				_ = b.PutKey(&r)
				if i%7 == 0 {
					b = s.NewBatch() // some empty batches too
				}
				s.Apply(b, func(err error) {
					mu.Lock()
					order = append(order, i)
					if len(order) == n {
						close(done)
					}
					mu.Unlock()
				})
			}
			<-done
			for i, v := range order {
				if v != i {
					t.Fatalf("done calls out of order at %d: %v", i, order[max(0, i-3):i+1])
				}
			}
		})
	}
}

func TestBadBatchesWriteNothing(t *testing.T) {
	s := memT(t)
	other := memT(t)
	good := keyRec(1, KeyDone, base)
	for _, tc := range []struct {
		name    string
		build   func() *Batch
		wantErr string
	}{
		{"key state 0", func() *Batch {
			b := s.NewBatch()
			_ = b.PutKey(&good)
			_ = b.PutKey(&KeyRecord{FP: testFP(2), At: base})
			return b
		}, "state 0"},
		{"key without a time", func() *Batch {
			b := s.NewBatch()
			_ = b.PutKey(&good)
			_ = b.PutKey(&KeyRecord{FP: testFP(2), State: KeyDone})
			return b
		}, "At is zero"},
		{"job id 0", func() *Batch {
			b := s.NewBatch()
			_ = b.PutKey(&good)
			_ = b.PutJob(&JobRecord{State: JobQueued})
			return b
		}, "ID is 0"},
		{"job state 9", func() *Batch {
			b := s.NewBatch()
			_ = b.PutKey(&good)
			_ = b.PutJob(&JobRecord{ID: 1, State: 9})
			return b
		}, "state 9"},
		{"done job without Updated", func() *Batch {
			b := s.NewBatch()
			_ = b.PutKey(&good)
			_ = b.PutJob(&JobRecord{ID: 1, State: JobDone})
			return b
		}, "zero Updated"},
		{"meta without a name", func() *Batch {
			b := s.NewBatch()
			_ = b.PutKey(&good)
			_ = b.PutMeta("", 1)
			return b
		}, "empty name"},
		{"nil batch", func() *Batch { return nil }, "nil batch"},
		{"another store's batch", func() *Batch {
			b := other.NewBatch()
			_ = b.PutKey(&good)
			return b
		}, "another store"},
		{"batch applied twice", func() *Batch {
			b := s.NewBatch()
			if err := s.Commit(b); err != nil {
				t.Fatal(err)
			}
			_ = b.PutKey(&good)
			return b
		}, "after Apply"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Commit(tc.build())
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Commit = %v; want an error containing %q", err, tc.wantErr)
			}
			if _, _, ok, err := s.LookupKey(good.FP); ok || err != nil {
				t.Errorf("the valid part of a bad batch was written (%v, %v)", ok, err)
			}
		})
	}
}

// Apply racing Close: every done is called exactly once, with nil or
// ErrClosed, and every batch acknowledged with nil is in the store.
func TestApplyRacingClose(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Path: dir, Sync: SyncBatch, SyncInterval: time.Millisecond, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	calls := map[int]int{}
	var okIDs []int
	var acks ackLog
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 4000; i += 4 {
				r := keyRec(i, KeyDone, base)
				b := s.NewBatch()
				_ = b.PutKey(&r)
				s.Apply(b, func(err error) {
					mu.Lock()
					defer mu.Unlock()
					calls[i]++
					switch {
					case err == nil:
						okIDs = append(okIDs, i)
					case !errors.Is(err, ErrClosed):
						t.Errorf("batch %d: %v", i, err)
					}
					acks.add(i)
				})
			}
		}()
	}
	if !acks.waitFor(500, 20*time.Second) {
		t.Fatalf("only %d batches done in 20s", acks.len())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i := range 4000 {
		if calls[i] != 1 {
			t.Fatalf("done of batch %d called %d times", i, calls[i])
		}
	}
	s = openT(t, Options{Path: dir})
	for _, i := range okIDs {
		if _, _, ok, err := s.LookupKey(testFP(i)); !ok || err != nil {
			t.Fatalf("acknowledged batch %d missing after Close (%v)", i, err)
		}
	}
	t.Logf("%d of 4000 batches acknowledged before Close", len(okIDs))
}

// failingFS fails every write and sync of WAL files once armed.
type failingFS struct {
	vfs.FS
	armed atomic.Bool
}

func (f *failingFS) wrap(file vfs.File, name string, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return file, err
	}
	return &failingFile{File: file, fs: f}, nil
}

func (f *failingFS) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	file, err := f.FS.Create(name, cat)
	return f.wrap(file, name, err)
}

func (f *failingFS) ReuseForWrite(oldname, newname string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	file, err := f.FS.ReuseForWrite(oldname, newname, cat)
	return f.wrap(file, newname, err)
}

type failingFile struct {
	vfs.File
	fs *failingFS
}

var errDiskGone = errors.New("injected: disk gone")

func (f *failingFile) Write(p []byte) (int, error) {
	if f.fs.armed.Load() {
		return 0, errDiskGone
	}
	return f.File.Write(p)
}

func (f *failingFile) Sync() error {
	if f.fs.armed.Load() {
		return errDiskGone
	}
	return f.File.Sync()
}

func (f *failingFile) SyncData() error {
	if f.fs.armed.Load() {
		return errDiskGone
	}
	return f.File.SyncData()
}

// A failed WAL write fails the batch and every later one, with an error
// naming the cause, instead of acknowledging or crashing.
func TestWriteFailureIsSticky(t *testing.T) {
	ffs := &failingFS{FS: vfs.NewMem()}
	s, err := Open(Options{Path: "/db", Sync: SyncAlways, fs: ffs, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	r := keyRec(1, KeyDone, base)
	commitT(t, s, func(b *Batch) error { return b.PutKey(&r) })
	ffs.armed.Store(true)
	for i := range 3 {
		r := keyRec(10+i, KeyDone, base)
		b := s.NewBatch()
		_ = b.PutKey(&r)
		err := s.Commit(b)
		if err == nil || !strings.Contains(err.Error(), "no more writes") {
			t.Fatalf("Commit %d after the disk failed = %v; want the sticky write error", i, err)
		}
		t.Logf("commit %d: %v", i, err)
	}
	if _, _, ok, err := s.LookupKey(testFP(1)); !ok || err != nil {
		t.Errorf("reads after a write failure: %v %v", ok, err)
	}
	if err := s.Close(); err == nil {
		t.Errorf("Close after a write failure = nil; want the failure")
	} else {
		t.Logf("close: %v", err)
	}
}

func ExampleStore_Apply() {
	s, err := OpenMemory()
	if err != nil {
		panic(err)
	}
	defer s.Close()
	b := s.NewBatch()
	_ = b.PutKey(&KeyRecord{FP: testFP(1), Key: testKey(1), State: KeyDone, At: base})
	_ = b.PutMeta("next-job-id", 42)
	acked := make(chan error, 1)
	s.Apply(b, func(err error) { acked <- err }) // returns at once
	fmt.Println("acknowledged:", <-acked)
	st, at, ok, _ := s.LookupKey(testFP(1))
	fmt.Println(st, at.Format(time.RFC3339), ok)
	// Output:
	// acknowledged: <nil>
	// done 2025-03-01T12:00:00Z true
}

// SyncNone acknowledges without fsync, but Close makes everything durable.
func TestSyncNoneCloseSyncs(t *testing.T) {
	mem := vfs.NewCrashableMem()
	s, err := Open(Options{Path: "/db", Sync: SyncNone, fs: mem, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		r := keyRec(i, KeyDone, base)
		b := s.NewBatch()
		_ = b.PutKey(&r)
		s.Apply(b, nil)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	c := openT(t, Options{Path: "/db", fs: mem.CrashClone(vfs.CrashCloneCfg{})}) // power cut after Close
	if _, st := recoverAll(t, c); st.KeysDone != 500 {
		t.Errorf("%d of 500 keys survived a crash after Close", st.KeysDone)
	}
}

// A batch's Before function runs on the writer before the batch is
// written: until it returns, neither that batch nor any applied after it
// is in the store or acknowledged.
func TestBeforeHoldsTheBatchBack(t *testing.T) {
	s := openT(t, Options{Path: "/db", Sync: SyncAlways, fs: vfs.NewMem()})
	release, running := make(chan struct{}), make(chan struct{})
	first, second := keyRec(1, KeyDone, base), keyRec(2, KeyDone, base)
	b := s.NewBatch()
	_ = b.PutKey(&first)
	b.Before(func() {
		close(running)
		<-release
	})
	acked := make(chan error, 2)
	s.Apply(b, func(err error) { acked <- err })
	b2 := s.NewBatch()
	_ = b2.PutKey(&second)
	s.Apply(b2, func(err error) { acked <- err })

	select {
	case <-running:
	case <-time.After(10 * time.Second):
		t.Fatal("Before never ran")
	}
	for _, r := range []KeyRecord{first, second} {
		if _, ok, err := s.GetKey(r.FP); err != nil || ok {
			t.Fatalf("key %d in the store (%v, %v) while Before holds its batch back", r.FP, ok, err)
		}
	}
	select {
	case err := <-acked:
		t.Fatalf("a batch acknowledged (%v) while Before holds it back", err)
	default:
	}
	close(release)
	for range 2 {
		if err := <-acked; err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []KeyRecord{first, second} {
		if _, ok, err := s.GetKey(r.FP); err != nil || !ok {
			t.Fatalf("key %d not in the store (%v, %v) after Before returned", r.FP, ok, err)
		}
	}
}
