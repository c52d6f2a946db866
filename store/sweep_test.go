package store

import (
	"drover/coord/id"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

func TestSweepExpiresByTTL(t *testing.T) {
	const hour = time.Hour
	type rec struct {
		key  *KeyRecord
		job  *JobRecord
		name string
	}
	k := func(i int, st KeyState) rec {
		r := keyRec(i, st, base)
		return rec{key: &r, name: "key " + st.String()}
	}
	j := func(i uint64, st JobState) rec {
		r := jobRec(i, st, base)
		return rec{job: &r, name: "job " + st.String()}
	}
	all := []rec{
		k(1, KeyQueued), k(2, KeyDone), k(3, KeyFailed),
		j(1, JobQueued), j(2, JobDispatched), j(3, JobBackoff), j(4, JobDone), j(5, JobFailed),
	}
	for _, tc := range []struct {
		name              string
		now               time.Time
		doneTTL, failTTL  time.Duration
		wantGone          []string
		wantDeletedRecord int
	}{
		{"just before the done TTL", base.Add(hour - 1), hour, 2 * hour, nil, 0},
		{"at the done TTL", base.Add(hour), hour, 2 * hour, []string{"key done", "job done"}, 2},
		{"at the failed TTL", base.Add(2 * hour), hour, 2 * hour, []string{"key done", "job done", "key failed", "job failed"}, 4},
		{"done kept forever", base.Add(100 * hour), 0, 2 * hour, []string{"key failed", "job failed"}, 2},
		{"nothing expires", base.Add(100 * hour), 0, 0, nil, 0},
		{"a clock before the records", base.Add(-hour), time.Nanosecond, time.Nanosecond, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := memT(t)
			commitT(t, s, func(b *Batch) error {
				var errs []error
				for _, r := range all {
					if r.key != nil {
						errs = append(errs, b.PutKey(r.key))
					} else {
						errs = append(errs, b.PutJob(r.job))
					}
				}
				return errors.Join(errs...)
			})
			n, err := s.Sweep(tc.now, tc.doneTTL, tc.failTTL)
			if err != nil || n != tc.wantDeletedRecord {
				t.Fatalf("Sweep = %d, %v; want %d", n, err, tc.wantDeletedRecord)
			}
			gone := map[string]bool{}
			for _, g := range tc.wantGone {
				gone[g] = true
			}
			for _, r := range all {
				var ok bool
				if r.key != nil {
					_, _, ok, err = s.LookupKey(r.key.FP)
				} else {
					_, ok, err = s.GetJob(r.job.ID)
				}
				if err != nil || ok == gone[r.name] {
					t.Errorf("%s: present %v (%v); want present %v", r.name, ok, err, !gone[r.name])
				}
			}
		})
	}
}

// countExpiry counts the expiry index entries.
func countExpiry(t *testing.T, s *Store) int {
	t.Helper()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{pfxExpiry}, UpperBound: []byte{pfxEnd}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for v := it.First(); v; v = it.Next() {
		n++
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return n
}

// A record changed after its index entry was written (re-done later,
// requeued, deleted) is not deleted by the stale entry; the entry goes.
func TestSweepSkipsStaleEntries(t *testing.T) {
	s := memT(t)
	put := func(i int, st KeyState, at time.Time) {
		r := keyRec(i, st, at)
		commitT(t, s, func(b *Batch) error { return b.PutKey(&r) })
	}
	put(1, KeyDone, base)
	put(1, KeyDone, base.Add(2*time.Hour)) // re-done later
	put(2, KeyDone, base)
	put(2, KeyQueued, base.Add(time.Minute)) // requeued
	put(3, KeyDone, base)
	commitT(t, s, func(b *Batch) error { return b.DeleteKey(testFP(3)) })
	put(3, KeyQueued, base.Add(time.Minute)) // deleted, then queued again
	put(4, KeyDone, base)
	put(4, KeyFailed, base) // same time, other state

	n, err := s.Sweep(base.Add(90*time.Minute), time.Hour, 24*time.Hour)
	if err != nil || n != 0 {
		t.Fatalf("Sweep = %d, %v; want 0 (every entry is stale or young)", n, err)
	}
	for i, want := range map[int]KeyState{1: KeyDone, 2: KeyQueued, 3: KeyQueued, 4: KeyFailed} {
		if st, _, ok, err := s.LookupKey(testFP(i)); !ok || err != nil || st != want {
			t.Errorf("key %d: %v, %v, %v; want %v", i, st, ok, err, want)
		}
	}
	// Left: key 1's second done entry and key 4's failed entry (young
	// under 24h); the stale ones are gone.
	if got := countExpiry(t, s); got != 2 {
		t.Errorf("%d expiry entries left, want 2 (key 1 re-done, key 4 failed)", got)
	}
	n, err = s.Sweep(base.Add(3*time.Hour), time.Hour, 24*time.Hour)
	if err != nil || n != 1 {
		t.Fatalf("second Sweep = %d, %v; want 1 (key 1)", n, err)
	}
	if _, _, ok, _ := s.LookupKey(testFP(1)); ok {
		t.Errorf("key 1 still present")
	}
}

// A sweep of many records works in steps and leaves an empty index.
func TestSweepInSteps(t *testing.T) {
	s := openT(t, Options{Path: t.TempDir(), Sync: SyncNone})
	const n = 5*sweepStep + 17
	b := s.NewBatch()
	for i := range n {
		r := keyRec(i, KeyDone, base.Add(time.Duration(i)*time.Millisecond))
		_ = b.PutKey(&r)
	}
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	got, err := s.Sweep(base.Add(time.Hour+time.Duration(n)*time.Millisecond), time.Hour, 0)
	if err != nil || got != n {
		t.Fatalf("Sweep = %d, %v; want %d", got, err, n)
	}
	if recs, _ := recoverAll(t, s); len(recs) != 0 {
		t.Errorf("%d records left", len(recs))
	}
	if c := countExpiry(t, s); c != 0 {
		t.Errorf("%d expiry entries left", c)
	}
	if got, err := s.Sweep(base.Add(48*time.Hour), time.Hour, time.Hour); err != nil || got != 0 {
		t.Errorf("sweeping again = %d, %v; want 0", got, err)
	}
}

// Writes racing a sweep are never lost: a key requeued while the sweep runs
// stays, whether its write lands before or after the step that examines it.
func TestSweepRacingWrites(t *testing.T) {
	s := openT(t, Options{Path: t.TempDir(), Sync: SyncNone})
	const n = 6000
	b := s.NewBatch()
	for i := range n {
		r := keyRec(i, KeyDone, base)
		_ = b.PutKey(&r)
	}
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	swept := 0
	var sweepErr error
	go func() {
		defer wg.Done()
		swept, sweepErr = s.Sweep(base.Add(2*time.Hour), time.Hour, 0)
	}()
	for i := 0; i < n; i += 2 {
		r := keyRec(i, KeyQueued, base.Add(2*time.Hour))
		b := s.NewBatch()
		_ = b.PutKey(&r)
		s.Apply(b, nil)
	}
	commitT(t, s, func(*Batch) error { return nil }) // after every requeue
	wg.Wait()
	if sweepErr != nil {
		t.Fatal(sweepErr)
	}
	for i := range n {
		st, _, ok, err := s.LookupKey(testFP(i))
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 && (!ok || st != KeyQueued) {
			t.Fatalf("requeued key %d: %v, present %v; want queued", i, st, ok)
		}
		if i%2 == 1 && ok {
			t.Fatalf("expired key %d survived the sweep", i)
		}
	}
	// A requeue that landed after its key's step re-created the record.
	if swept < n/2 || swept > n {
		t.Errorf("Sweep deleted %d, want %d to %d", swept, n/2, n)
	}
	t.Logf("sweep deleted %d records while %d were requeued", swept, n/2)
}

func TestSweepRejectsNegativeTTL(t *testing.T) {
	s := memT(t)
	if _, err := s.Sweep(base, -time.Second, 0); err == nil {
		t.Error("Sweep with a negative TTL succeeded")
	}
}

// Records written with times below where the last sweep stopped are still
// swept: a batch lowers the sweep's starting point.
func TestSweepFindsRecordsOlderThanItsLastPosition(t *testing.T) {
	s := memT(t)
	put := func(i int, st KeyState, at time.Time) {
		r := keyRec(i, st, at)
		commitT(t, s, func(b *Batch) error { return b.PutKey(&r) })
	}
	put(1, KeyDone, base)
	put(2, KeyFailed, base)
	if n, err := s.Sweep(base.Add(2*time.Hour), time.Hour, time.Hour); err != nil || n != 2 {
		t.Fatalf("first Sweep = %d, %v; want 2", n, err)
	}
	put(3, KeyDone, base.Add(-time.Hour)) // older than anything swept
	put(4, KeyDone, base.Add(10*time.Minute))
	put(5, KeyFailed, base.Add(-time.Hour))
	j := jobRec(6, JobDone, base.Add(-time.Hour))
	commitT(t, s, func(b *Batch) error { return b.PutJob(&j) })
	if n, err := s.Sweep(base.Add(3*time.Hour), time.Hour, time.Hour); err != nil || n != 4 {
		t.Fatalf("second Sweep = %d, %v; want 4", n, err)
	}
	if recs, _ := recoverAll(t, s); len(recs) != 0 {
		t.Errorf("left after the sweeps: %+v", recs)
	}
}

// SweepKeys reports the fingerprints of the key records it deleted (not
// the jobs', not the records it kept), however many steps it took.
func TestSweepKeysReportsDeletedKeys(t *testing.T) {
	s := memT(t)
	const n = 2*sweepStep + 10
	want := map[string]bool{}
	commitT(t, s, func(b *Batch) error {
		var errs []error
		for i := range n {
			st := KeyDone
			if i%3 == 0 {
				st = KeyFailed
			}
			r := keyRec(i, st, base)
			want[r.FP.String()] = true
			errs = append(errs, b.PutKey(&r))
		}
		kept := keyRec(n, KeyDone, base.Add(10*time.Hour)) // too young to expire
		j := jobRec(1, JobDone, base)
		return errors.Join(append(errs, b.PutKey(&kept), b.PutJob(&j))...)
	})
	got := map[string]bool{}
	calls := 0
	deleted, err := s.SweepKeys(base.Add(2*time.Hour), time.Hour, time.Hour, func(fps []id.Fingerprint) {
		calls++
		for _, fp := range fps {
			if got[fp.String()] {
				t.Errorf("%s reported twice", fp)
			}
			got[fp.String()] = true
		}
	})
	if err != nil || deleted != n+1 { // the keys and the job
		t.Fatalf("SweepKeys = %d, %v; want %d", deleted, err, n+1)
	}
	if len(got) != len(want) || calls < 2 {
		t.Fatalf("%d keys reported in %d calls, want the %d deleted, in steps", len(got), calls, len(want))
	}
	for fp := range want {
		if !got[fp] {
			t.Fatalf("deleted key %s not reported", fp)
		}
	}
}

// A batch that finishes many records of one class at one time indexes
// them in a few grouped entries (not one per record), unique across
// batches and reopens; the sweep deletes each record still done at that
// time and skips those changed since, as with plain entries.
func TestSweepGroupedEntries(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, Options{Path: dir, Sync: SyncNone})
	const n = 3*maxGroupIdents + 5
	doneBatch := func(s *Store, first int) {
		commitT(t, s, func(b *Batch) error {
			var errs []error
			for i := first; i < first+n; i++ {
				r := keyRec(i, KeyDone, base)
				j := jobRec(uint64(i+1), JobDone, base)
				errs = append(errs, b.PutKey(&r), b.PutJob(&j))
			}
			return errors.Join(errs...)
		})
	}
	doneBatch(s, 0)
	if got, want := countExpiry(t, s), 2*4; got != want { // per class: 3 full groups and one of 5
		t.Fatalf("%d expiry entries for %d done keys and jobs, want %d", got, n, want)
	}
	doneBatch(s, n) // same class and time: other entries, none replaced
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, Options{Path: dir, Sync: SyncNone})
	doneBatch(s, 2*n) // after a reopen: still other entries
	if got, want := countExpiry(t, s), 3*2*4; got != want {
		t.Fatalf("%d expiry entries after three batches, want %d", got, want)
	}
	// Changed since: key 7 requeued, job 8 re-done later.
	r := keyRec(7, KeyQueued, base.Add(time.Minute))
	j := jobRec(8, JobDone, base.Add(2*time.Hour))
	commitT(t, s, func(b *Batch) error { return errors.Join(b.PutKey(&r), b.PutJob(&j)) })

	got, err := s.Sweep(base.Add(90*time.Minute), time.Hour, time.Hour)
	if want := 2*3*n - 2; err != nil || got != want {
		t.Fatalf("Sweep = %d, %v; want %d (all but the requeued key and the re-done job)", got, err, want)
	}
	recs, _ := recoverAll(t, s)
	if len(recs) != 2 || recs[0].Kind != KindKey || recs[0].Key.FP != testFP(7) || recs[1].Kind != KindJob || recs[1].Job.ID != 8 {
		t.Fatalf("left after the sweep: %+v, want key 7 and job 8", recs)
	}
	if got := countExpiry(t, s); got != 1 { // job 8's later entry
		t.Errorf("%d expiry entries left, want 1", got)
	}
}

// A grouped expiry entry whose value is not a whole number of idents is
// reported as corrupt.
func TestSweepCorruptGroupedEntry(t *testing.T) {
	s := memT(t)
	r := keyRec(1, KeyDone, base)
	commitT(t, s, func(b *Batch) error { return b.PutKey(&r) })
	bad := s.db.NewBatch()
	_ = bad.Set(expiryKey(classKeyDone, stamp(base), s.groupIdent()), []byte("not a fingerprint"), nil)
	if err := s.db.Apply(bad, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sweep(base.Add(2*time.Hour), time.Hour, 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Sweep over a corrupt grouped entry: %v, want ErrCorrupt", err)
	}
}

// A record with two expiry entries of one class and time (written done at
// the same time twice, in one batch or in two) is deleted, counted and
// reported once.
func TestSweepDuplicateEntries(t *testing.T) {
	for _, tc := range []struct {
		name    string
		batches [][]int // the keys each batch writes done at base
		want    int     // distinct keys
	}{
		{"twice in one batch", [][]int{{1, 1}}, 1},
		{"twice in one grouped entry", [][]int{{1, 2, 1}}, 2},
		{"plain then grouped", [][]int{{1}, {1, 2}}, 2},
		{"in two grouped entries", [][]int{{1, 2}, {2, 1, 3}}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := memT(t)
			for _, keys := range tc.batches {
				commitT(t, s, func(b *Batch) error {
					for _, i := range keys {
						r := keyRec(i, KeyDone, base)
						if err := b.PutKey(&r); err != nil {
							return err
						}
					}
					return nil
				})
			}
			seen := map[id.Fingerprint]int{}
			n, err := s.SweepKeys(base.Add(2*time.Hour), time.Hour, 0, func(fps []id.Fingerprint) {
				for _, fp := range fps {
					seen[fp]++
				}
			})
			if err != nil || n != tc.want {
				t.Fatalf("Sweep = %d, %v; want %d", n, err, tc.want)
			}
			if len(seen) != tc.want {
				t.Errorf("reported %d keys, want %d", len(seen), tc.want)
			}
			for fp, c := range seen {
				if c != 1 {
					t.Errorf("key %x reported %d times, want once", fp, c)
				}
			}
			if c := countExpiry(t, s); c != 0 {
				t.Errorf("%d expiry entries left", c)
			}
		})
	}
}

// Records of one batch done at times that interleave (and across classes)
// still share one entry per class and time, whichever group the record
// before them went to; each is swept once, at its own time.
func TestSweepInterleavedGroups(t *testing.T) {
	s := memT(t)
	const times, per = 50, 3
	commitT(t, s, func(b *Batch) error {
		var errs []error
		for round := range per {
			for i := range times {
				at := base.Add(time.Duration(i) * time.Second)
				r := keyRec(round*times+i, KeyDone, at)
				j := jobRec(uint64(round*times+i+1), JobDone, at)
				errs = append(errs, b.PutKey(&r), b.PutJob(&j))
			}
		}
		return errors.Join(errs...)
	})
	if got, want := countExpiry(t, s), 2*times; got != want {
		t.Fatalf("%d expiry entries, want %d (one per class and time)", got, want)
	}
	half := times / 2
	n, err := s.Sweep(base.Add(time.Hour+time.Duration(half-1)*time.Second), time.Hour, 0)
	if err != nil || n != 2*half*per {
		t.Fatalf("Sweep = %d, %v; want %d (the first %d times)", n, err, 2*half*per, half)
	}
	if got, want := countExpiry(t, s), 2*(times-half); got != want {
		t.Errorf("%d expiry entries left, want %d", got, want)
	}
}
