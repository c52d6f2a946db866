package store

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"drover/coord/id"
)

// model is what the store should hold after a sequence of writes.
type model struct {
	meta map[string]uint64
	keys map[id.Fingerprint]KeyRecord
	jobs map[uint64]JobRecord
}

func newModel() *model {
	return &model{meta: map[string]uint64{}, keys: map[id.Fingerprint]KeyRecord{}, jobs: map[uint64]JobRecord{}}
}

// records lists the model in Recover's order.
func (m *model) records() []Record {
	var out []Record
	names := make([]string, 0, len(m.meta))
	for n := range m.meta {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		out = append(out, Record{Kind: KindMeta, Meta: MetaRecord{Name: n, Value: m.meta[n]}})
	}
	fps := make([]id.Fingerprint, 0, len(m.keys))
	for fp := range m.keys {
		fps = append(fps, fp)
	}
	slices.SortFunc(fps, func(a, b id.Fingerprint) int { return bytes.Compare(a[:], b[:]) })
	for _, fp := range fps {
		out = append(out, Record{Kind: KindKey, Key: m.keys[fp]})
	}
	ids := make([]uint64, 0, len(m.jobs))
	for j := range m.jobs {
		ids = append(ids, j)
	}
	slices.Sort(ids)
	for _, j := range ids {
		out = append(out, Record{Kind: KindJob, Job: m.jobs[j]})
	}
	return out
}

// randomBatch adds random changes to b and to the model.
func randomBatch(rng *rand.Rand, b *Batch, m *model, n int) error {
	for range n {
		i := rng.IntN(60) // a small key space, so keys are overwritten often
		at := base.Add(time.Duration(rng.IntN(1e6)) * time.Millisecond)
		var err error
		switch op := rng.IntN(10); {
		case op < 4:
			r := keyRec(i, KeyState(1+rng.IntN(3)), at)
			err = b.PutKey(&r)
			m.keys[r.FP] = r
		case op < 5:
			err = b.DeleteKey(testFP(i))
			delete(m.keys, testFP(i))
		case op < 8:
			r := jobRec(uint64(i+1), JobState(1+rng.IntN(5)), at)
			r.Attempts = rng.IntN(5)
			err = b.PutJob(&r)
			m.jobs[r.ID] = r
		case op < 9:
			err = b.DeleteJob(uint64(i + 1))
			delete(m.jobs, uint64(i+1))
		default:
			name := []string{"next-job-id", "epoch-ish", "a"}[rng.IntN(3)]
			if rng.IntN(4) == 0 {
				err = b.DeleteMeta(name)
				delete(m.meta, name)
			} else {
				v := rng.Uint64()
				err = b.PutMeta(name, v)
				m.meta[name] = v
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Recover returns exactly the last write of every key, in meta, key, job
// order, the same across reopens.
func TestRecoverMatchesAModel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	rng := rand.New(rand.NewPCG(7, 7))
	m := newModel()
	for round := range 4 {
		s, err := Open(Options{Path: dir, Sync: SyncNone, Log: quiet})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for range 30 {
			b := s.NewBatch()
			if err := randomBatch(rng, b, m, 1+rng.IntN(20)); err != nil {
				t.Fatal(err)
			}
			if err := s.Commit(b); err != nil {
				t.Fatal(err)
			}
		}
		if round == 2 {
			if err := s.db.Flush(); err != nil { // some records in tables
				t.Fatal(err)
			}
		}
		got, st := recoverAll(t, s)
		want := m.records()
		if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("round %d: Recover (-want +got):\n%s", round, d)
		}
		if st.Keys() != len(m.keys) || st.Jobs() != len(m.jobs) || st.Meta != len(m.meta) {
			t.Errorf("round %d: stats %+v for %d keys, %d jobs, %d meta", round, st, len(m.keys), len(m.jobs), len(m.meta))
		}
		again, _ := recoverAll(t, s)
		if !cmp.Equal(got, again, cmpopts.EquateEmpty()) {
			t.Errorf("round %d: two Recovers differ", round)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLastWriteWins(t *testing.T) {
	k := func(st KeyState, d time.Duration) KeyRecord { return keyRec(1, st, base.Add(d)) }
	for _, tc := range []struct {
		name    string
		batches [][]func(b *Batch) error
		want    *KeyRecord
	}{
		{"queued then done in one batch", [][]func(*Batch) error{{
			func(b *Batch) error { r := k(KeyQueued, 0); return b.PutKey(&r) },
			func(b *Batch) error { r := k(KeyDone, time.Second); return b.PutKey(&r) },
		}}, &KeyRecord{FP: testFP(1), Key: testKey(1), State: KeyDone, At: base.Add(time.Second)}},
		{"done then queued across batches", [][]func(*Batch) error{
			{func(b *Batch) error { r := k(KeyDone, 0); return b.PutKey(&r) }},
			{func(b *Batch) error { r := k(KeyQueued, time.Minute); return b.PutKey(&r) }},
		}, &KeyRecord{FP: testFP(1), Key: testKey(1), State: KeyQueued, At: base.Add(time.Minute)}},
		{"put then delete", [][]func(*Batch) error{
			{func(b *Batch) error { r := k(KeyDone, 0); return b.PutKey(&r) }},
			{func(b *Batch) error { return b.DeleteKey(testFP(1)) }},
		}, nil},
		{"delete then put in one batch", [][]func(*Batch) error{{
			func(b *Batch) error { return b.DeleteKey(testFP(1)) },
			func(b *Batch) error { r := k(KeyFailed, 0); return b.PutKey(&r) },
		}}, &KeyRecord{FP: testFP(1), Key: testKey(1), State: KeyFailed, At: base}},
		{"delete of an absent key", [][]func(*Batch) error{
			{func(b *Batch) error { return b.DeleteKey(testFP(1)) }},
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := memT(t)
			for _, ops := range tc.batches {
				commitT(t, s, func(b *Batch) error {
					for _, op := range ops {
						if err := op(b); err != nil {
							return err
						}
					}
					return nil
				})
			}
			got, _ := recoverAll(t, s)
			var want []Record
			if tc.want != nil {
				want = []Record{{Kind: KindKey, Key: *tc.want}}
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("Recover (-want +got):\n%s", d)
			}
			r, ok, err := s.GetKey(testFP(1))
			if err != nil || ok != (tc.want != nil) || (ok && !cmp.Equal(r, *tc.want)) {
				t.Errorf("GetKey = %+v, %v, %v; want %+v", r, ok, err, tc.want)
			}
		})
	}
}

func TestPointReads(t *testing.T) {
	s := memT(t)
	k := keyRec(1, KeyFailed, base)
	j := jobRec(9, JobBackoff, base)
	commitT(t, s, func(b *Batch) error {
		return errors.Join(b.PutKey(&k), b.PutJob(&j), b.PutMeta("next-job-id", 10))
	})
	if st, at, ok, err := s.LookupKey(k.FP); err != nil || !ok || st != KeyFailed || !at.Equal(base) {
		t.Errorf("LookupKey hit = %v, %v, %v, %v", st, at, ok, err)
	}
	if _, _, ok, err := s.LookupKey(testFP(2)); err != nil || ok {
		t.Errorf("LookupKey miss = %v, %v", ok, err)
	}
	if got, ok, err := s.GetJob(9); err != nil || !ok || !cmp.Equal(got, j, cmpopts.EquateEmpty()) {
		t.Errorf("GetJob = %+v, %v, %v", got, ok, err)
	}
	if _, ok, err := s.GetJob(10); err != nil || ok {
		t.Errorf("GetJob miss = %v, %v", ok, err)
	}
	if v, ok, err := s.GetMeta("next-job-id"); err != nil || !ok || v != 10 {
		t.Errorf("GetMeta = %d, %v, %v", v, ok, err)
	}
	if _, ok, err := s.GetMeta("nope"); err != nil || ok {
		t.Errorf("GetMeta miss = %v, %v", ok, err)
	}
}

var errStop = errors.New("enough")

func TestRecoverStopsOnCallbackError(t *testing.T) {
	s := memT(t)
	commitT(t, s, func(b *Batch) error {
		for i := range 10 {
			r := keyRec(i, KeyDone, base)
			if err := b.PutKey(&r); err != nil {
				return err
			}
		}
		return nil
	})
	calls := 0
	_, err := s.Recover(func(Record) error {
		calls++
		if calls == 3 {
			return errStop
		}
		return nil
	})
	if !errors.Is(err, errStop) || calls != 3 {
		t.Errorf("Recover = %v after %d calls; want errStop after 3", err, calls)
	}
}

// A record that does not decode is reported as corruption, by Recover and
// by the point reads.
func TestUndecodableRecordIsCorruption(t *testing.T) {
	for _, tc := range []struct {
		name string
		k, v []byte
		read func(s *Store) error
	}{
		{"key value", keyKey(testFP(1)), []byte{1, 2}, func(s *Store) error {
			_, _, _, err := s.LookupKey(testFP(1))
			return err
		}},
		{"key of the wrong length", append(keyKey(testFP(1)), 0), encodeKey(nil, &KeyRecord{State: KeyDone, At: base}), nil},
		{"job value", jobKey(3), []byte{1, 9, 0}, func(s *Store) error {
			_, _, err := s.GetJob(3)
			return err
		}},
		{"meta value", metaKey("x"), []byte{1}, func(s *Store) error {
			_, _, err := s.GetMeta("x")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := memT(t)
			if err := s.db.Set(tc.k, tc.v, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Recover(func(Record) error { return nil }); !IsCorrupt(err) {
				t.Errorf("Recover = %v; want ErrCorrupt", err)
			}
			if tc.read != nil {
				if err := tc.read(s); !IsCorrupt(err) {
					t.Errorf("point read = %v; want ErrCorrupt", err)
				}
			}
		})
	}
}

func TestStatsCountByState(t *testing.T) {
	s := memT(t)
	commitT(t, s, func(b *Batch) error {
		var errs []error
		for i, st := range []KeyState{KeyQueued, KeyQueued, KeyDone, KeyFailed} {
			r := keyRec(i, st, base)
			errs = append(errs, b.PutKey(&r))
		}
		for i, st := range []JobState{JobQueued, JobDispatched, JobDispatched, JobBackoff, JobDone, JobFailed} {
			r := jobRec(uint64(i+1), st, base)
			errs = append(errs, b.PutJob(&r))
		}
		errs = append(errs, b.PutMeta("m", 1))
		return errors.Join(errs...)
	})
	_, st := recoverAll(t, s)
	st.Elapsed = 0
	want := Stats{Meta: 1, KeysQueued: 2, KeysDone: 1, KeysFailed: 1,
		JobsQueued: 1, JobsDispatched: 2, JobsBackoff: 1, JobsDone: 1, JobsFailed: 1, PlainAbove: 6}
	if st != want {
		t.Errorf("Stats = %+v, want %+v", st, want)
	}
	if v := st.LogValue().String(); v == "" {
		t.Errorf("empty LogValue")
	}
}

func TestRecoverWithSkips(t *testing.T) {
	s := memT(t)
	commitT(t, s, func(b *Batch) error {
		var errs []error
		for i, st := range []KeyState{KeyQueued, KeyDone, KeyFailed, KeyQueued} {
			r := keyRec(i, st, base)
			errs = append(errs, b.PutKey(&r))
		}
		for i, st := range []JobState{JobQueued, JobDispatched, JobDone, JobFailed, JobBackoff} {
			r := jobRec(uint64(i+1), st, base)
			errs = append(errs, b.PutJob(&r))
		}
		return errors.Join(errs...)
	})
	all, full := recoverAll(t, s)
	for _, tc := range []struct {
		name string
		o    RecoverOptions
		keep func(r Record) bool
	}{
		{"nothing skipped", RecoverOptions{}, func(Record) bool { return true }},
		{"done keys", RecoverOptions{SkipDoneKeys: true}, func(r Record) bool {
			return r.Kind != KindKey || r.Key.State == KeyQueued
		}},
		{"finished jobs", RecoverOptions{SkipFinishedJobs: true}, func(r Record) bool {
			return r.Kind != KindJob || (r.Job.State != JobDone && r.Job.State != JobFailed)
		}},
		{"both", RecoverOptions{SkipDoneKeys: true, SkipFinishedJobs: true}, func(r Record) bool {
			return (r.Kind != KindKey || r.Key.State == KeyQueued) && (r.Kind != KindJob || (r.Job.State != JobDone && r.Job.State != JobFailed))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want, got []Record
			for _, r := range all {
				if tc.keep(r) {
					want = append(want, r)
				}
			}
			st, err := s.RecoverWith(tc.o, func(r Record) error { got = append(got, r); return nil })
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("records (-want +got):\n%s", d)
			}
			st.Elapsed, full.Elapsed = 0, 0
			if st != full {
				t.Errorf("stats %+v, want every record counted: %+v", st, full)
			}
		})
	}
}

// A skipped record with a bad head is still reported.
func TestRecoverWithSkipsStillChecks(t *testing.T) {
	s := memT(t)
	if err := s.db.Set(keyKey(testFP(1)), []byte{7, 2}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecoverWith(RecoverOptions{SkipDoneKeys: true}, func(Record) error { return nil }); !IsCorrupt(err) {
		t.Errorf("RecoverWith = %v, want ErrCorrupt", err)
	}
}
