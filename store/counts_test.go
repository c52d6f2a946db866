package store

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"drover/coord/id"
)

// TestCountsEpoch: the counts are returned by the Open after the one that
// wrote them (and by that one), not once an Open in between kept none.
func TestCountsEpoch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	want := Counts{KeysQueued: 7, KeysDone: 3, LastJob: 12, PlainAbove: 5}
	s, err := Open(Options{Path: dir, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Counts(); ok || err != nil {
		t.Fatalf("new store: Counts ok %v, err %v; want none", ok, err)
	}
	commitT(t, s, func(b *Batch) error { return b.PutCounts(want) })
	if c, ok, err := s.Counts(); !ok || err != nil || c != want {
		t.Fatalf("Counts in the Open that wrote them = %+v, %v, %v; want %+v", c, ok, err, want)
	}
	reopen := func() {
		t.Helper()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if s, err = Open(Options{Path: dir, Log: quiet}); err != nil {
			t.Fatal(err)
		}
	}
	reopen()
	if c, ok, err := s.Counts(); !ok || err != nil || c != want {
		t.Fatalf("Counts in the next Open = %+v, %v, %v; want %+v", c, ok, err, want)
	}
	reopen() // this Open keeps no counts: the next must not trust them
	reopen()
	if c, ok, err := s.Counts(); ok || err != nil {
		t.Fatalf("Counts two Opens later = %+v, %v, %v; want none", c, ok, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestPutCountsRefusesPlainAboveLastJob(t *testing.T) {
	s := memT(t)
	b := s.NewBatch()
	if err := b.PutCounts(Counts{LastJob: 3, PlainAbove: 4}); err == nil || b.Err() == nil {
		t.Fatalf("PutCounts(plain above 4 > last job 3) = %v, batch error %v; want both an error", err, b.Err())
	}
}

// TestRecoverWithCounts checks the restore that takes its counts from
// Counts against the one that reads every record, as an oracle, on random
// stores: the same records reach fn, and the same queued jobs are left.
func TestRecoverWithCounts(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 7))
		s := memT(t)
		n := 1 + rng.IntN(300)
		plain := uint64(0)
		// Jobs 1..n: a prefix of mixed states, the rest queued (as a
		// coordinator that pages jobs out leaves them).
		mixed := rng.IntN(n + 1)
		keys := 0
		commitT(t, s, func(b *Batch) error {
			var errs []error
			for j := 1; j <= n; j++ {
				st := JobQueued
				if j <= mixed && rng.IntN(3) == 0 {
					st = JobState(1 + rng.IntN(int(nJobStates)-1))
				}
				r := jobRec(uint64(j), st, base)
				r.RetryAt = time.Time{}
				if st == JobQueued && j <= mixed && rng.IntN(10) == 0 {
					r.RetryAt = base // waiting a retry delay: not plain
				}
				if st != JobQueued || !r.RetryAt.IsZero() {
					plain = uint64(j)
				}
				errs = append(errs, b.PutJob(&r))
				if rng.IntN(2) == 0 {
					k := keyRec(j, KeyState(1+rng.IntN(int(nKeyStates)-1)), base)
					errs = append(errs, b.PutKey(&k))
					keys++
				}
			}
			errs = append(errs, b.PutMeta("last", uint64(n)))
			return errors.Join(errs...)
		})
		limit := 1 + rng.IntN(n+5)
		collect := func(o RecoverOptions) ([]Record, Stats) {
			var out []Record
			st, err := s.RecoverWith(o, func(r Record) error {
				if r.Kind != KindKey {
					out = append(out, r)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("seed %d: RecoverWith(%+v): %v", seed, o, err)
			}
			return out, st
		}
		slow, sst := collect(RecoverOptions{SkipQueuedKeys: true, SkipDoneKeys: true, MaxQueuedJobs: limit})
		if sst.PlainAbove != plain {
			t.Errorf("seed %d: PlainAbove %d, want %d", seed, sst.PlainAbove, plain)
		}
		c := Counts{LastJob: uint64(n), PlainAbove: plain}
		fast, fst := collect(RecoverOptions{SkipKeys: true, MaxQueuedJobs: limit, Counts: &c})
		if len(fast) != len(slow) {
			t.Fatalf("seed %d (n %d, mixed %d, limit %d): %d records with counts, %d without", seed, n, mixed, limit, len(fast), len(slow))
		}
		for i := range fast {
			if fast[i].Kind != slow[i].Kind || fast[i].Job.ID != slow[i].Job.ID || fast[i].Job.State != slow[i].Job.State {
				t.Fatalf("seed %d: record %d: %v job %d with counts, %v job %d without", seed, i, fast[i].Kind, fast[i].Job.ID, slow[i].Kind, slow[i].Job.ID)
			}
		}
		if fst.JobsQueued != sst.JobsQueued || fst.JobsQueuedLeft != sst.JobsQueuedLeft || fst.FirstJobLeft != sst.FirstJobLeft || fst.Jobs() > sst.Jobs() {
			t.Errorf("seed %d: with counts %+v, without %+v: want the same queued jobs and left", seed, fst, sst)
		}
		if !fst.KeysUnread || fst.Keys() != 0 || sst.Keys() != keys {
			t.Errorf("seed %d: keys read %d (unread %v) with counts, %d without; want 0 and %d", seed, fst.Keys(), fst.KeysUnread, sst.Keys(), keys)
		}
	}
}

// TestScanKeys: every key record once, in slices of the size asked, the
// counts by state, and the store's counts of the same moment.
func TestScanKeys(t *testing.T) {
	s := memT(t)
	var want []id.Fingerprint
	queued, done := 0, 0
	commitT(t, s, func(b *Batch) error {
		var errs []error
		for i := range 1000 {
			st := KeyState(1 + i%3)
			if st == KeyQueued {
				queued++
			} else {
				done++
			}
			r := keyRec(i, st, base)
			errs = append(errs, b.PutKey(&r))
			want = append(want, r.FP)
		}
		j := jobRec(1, JobQueued, base)
		errs = append(errs, b.PutJob(&j), b.PutMeta("m", 1))
		errs = append(errs, b.PutCounts(Counts{KeysQueued: 5, KeysDone: 6, LastJob: 1}))
		return errors.Join(errs...)
	})
	var got []id.Fingerprint
	states := map[id.Fingerprint]KeyState{}
	ks, err := s.ScanKeys(nil, 64, func(fps []id.Fingerprint, sts []KeyState) error {
		if len(fps) > 64 || len(sts) != len(fps) {
			t.Errorf("a slice of %d fingerprints and %d states, want at most 64 of each", len(fps), len(sts))
		}
		got = append(got, fps...)
		for i, fp := range fps {
			states[fp] = sts[i]
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(want, func(a, b id.Fingerprint) int { return slices.Compare(a[:], b[:]) })
	if !slices.Equal(got, want) {
		t.Errorf("ScanKeys passed %d fingerprints, want the %d key records in key order", len(got), len(want))
	}
	for i := range 1000 {
		if st := states[testFP(i)]; st != KeyState(1+i%3) {
			t.Errorf("key %d: state %v, want %v", i, st, KeyState(1+i%3))
		}
	}
	if ks.Queued != queued || ks.Done != done || !ks.CountsOK || ks.Counts != (Counts{KeysQueued: 5, KeysDone: 6, LastJob: 1}) {
		t.Errorf("ScanKeys = %+v, want %d queued, %d done and the counts written", ks, queued, done)
	}
	stop := make(chan struct{})
	close(stop)
	calls := 0
	if _, err := s.ScanKeys(stop, 10, func([]id.Fingerprint, []KeyState) error { calls++; return nil }); !errors.Is(err, ErrClosed) || calls != 1 {
		t.Errorf("ScanKeys stopped: err %v after %d slices, want ErrClosed after 1", err, calls)
	}
}
