package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"drover/coord/id"
)

func be64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// badRecord is the error of a record that does not decode.
func (s *Store) badRecord(kind RecordKind, key []byte, err error) error {
	return fmt.Errorf("store %s: %w: %s record %x: %w", s.where(), ErrCorrupt, kind, key, err)
}

func (s *Store) where() string {
	if s.opts.Memory {
		return "(memory)"
	}
	return s.path
}

// get calls fn with the value of k, reporting whether there was one.
func (s *Store) get(k []byte, fn func(v []byte) error) (bool, error) {
	v, closer, err := s.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store %s: read %x: %w", s.where(), k, corrupt(err))
	}
	err = fn(v)
	if cerr := closer.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("store %s: read %x: %w", s.where(), k, corrupt(cerr))
	}
	return true, err
}

func (s *Store) getUint64(k []byte) (v uint64, ok bool, err error) {
	ok, err = s.get(k, func(b []byte) error {
		var derr error
		if v, derr = decodeUint64(b); derr != nil {
			return s.badRecord(KindMeta, k, derr)
		}
		return nil
	})
	return v, ok, err
}

// lookupOptions are LookupKey's iterator options (NewIter copies them).
var lookupOptions = pebble.IterOptions{UseL6Filters: true}

// LookupKey answers the done-set question for fp without decoding its work
// key: its persisted state and time, ok false when the store has no record
// of it. A miss usually costs only bloom filter probes: unlike Pebble's Get,
// it consults the filters of the last level too, which holds most keys.
func (s *Store) LookupKey(fp id.Fingerprint) (state KeyState, at time.Time, ok bool, err error) {
	ks := [1]KeyLookup{{FP: fp}}
	if err := s.LookupKeys(ks[:]); err != nil {
		return 0, time.Time{}, false, err
	}
	return ks[0].State, ks[0].At, ks[0].Found, nil
}

// GetKey returns the ledger record of fp, ok false when there is none.
func (s *Store) GetKey(fp id.Fingerprint) (r KeyRecord, ok bool, err error) {
	ok, err = s.getRecord(KindKey, keyKey(fp), func(v []byte) error {
		r.FP = fp
		return decodeKey(v, &r)
	})
	return r, ok, err
}

// GetJob returns the record of job j, ok false when there is none.
func (s *Store) GetJob(j uint64) (r JobRecord, ok bool, err error) {
	ok, err = s.getRecord(KindJob, jobKey(j), func(v []byte) error {
		r.ID = j
		return decodeJob(v, &r)
	})
	return r, ok, err
}

// getRecord reads the record of the kind under k with decode, ok false when
// there is none; a record decode refuses is reported as bad.
func (s *Store) getRecord(kind RecordKind, k []byte, decode func(v []byte) error) (ok bool, err error) {
	if err := s.enter(); err != nil {
		return false, err
	}
	defer s.leave()
	return s.get(k, func(v []byte) error {
		if derr := decode(v); derr != nil {
			return s.badRecord(kind, k, derr)
		}
		return nil
	})
}

// GetMeta returns the named counter, ok false when it was never set.
func (s *Store) GetMeta(name string) (v uint64, ok bool, err error) {
	if err := s.enter(); err != nil {
		return 0, false, err
	}
	defer s.leave()
	return s.getUint64(metaKey(name))
}

// Stats counts what Recover returned, by kind and state.
type Stats struct {
	Meta                                                          int
	KeysQueued, KeysDone, KeysFailed                              int
	JobsQueued, JobsDispatched, JobsBackoff, JobsDone, JobsFailed int
	Elapsed                                                       time.Duration // how long Recover took
	// Left out by RecoverOptions (and counted above too): queued key
	// records (SkipQueuedKeys), queued job records beyond MaxQueuedJobs,
	// and the id of the first of those (0: none).
	KeysQueuedLeft, JobsQueuedLeft int
	FirstJobLeft                   uint64
	// KeysUnread: the key records were not read at all (SkipKeys), and
	// are counted in none of the above.
	KeysUnread bool
	// PlainAbove is the highest id of a job record seen (read or left
	// out) that is not queued with no retry time (Counts.PlainAbove).
	PlainAbove uint64
}

// Keys is the number of key records.
func (st Stats) Keys() int { return st.KeysQueued + st.KeysDone + st.KeysFailed }

// Jobs is the number of job records.
func (st Stats) Jobs() int {
	return st.JobsQueued + st.JobsDispatched + st.JobsBackoff + st.JobsDone + st.JobsFailed
}

// LogValue renders the counts for slog (zero counts left out).
func (st Stats) LogValue() slog.Value {
	attrs := []slog.Attr{slog.Int("keys", st.Keys()), slog.Int("jobs", st.Jobs())}
	for _, c := range []struct {
		name string
		n    int
	}{
		{"meta", st.Meta},
		{"keys_queued", st.KeysQueued}, {"keys_done", st.KeysDone}, {"keys_failed", st.KeysFailed},
		{"jobs_queued", st.JobsQueued}, {"jobs_dispatched", st.JobsDispatched}, {"jobs_backoff", st.JobsBackoff},
		{"jobs_done", st.JobsDone}, {"jobs_failed", st.JobsFailed},
	} {
		if c.n != 0 {
			attrs = append(attrs, slog.Int(c.name, c.n))
		}
	}
	attrs = append(attrs, slog.Duration("elapsed", st.Elapsed))
	return slog.GroupValue(attrs...)
}

func (st *Stats) count(r *Record) {
	switch r.Kind {
	case KindMeta:
		st.Meta++
	case KindKey:
		switch r.Key.State {
		case KeyQueued:
			st.KeysQueued++
		case KeyDone:
			st.KeysDone++
		case KeyFailed:
			st.KeysFailed++
		}
	case KindJob:
		switch r.Job.State {
		case JobQueued:
			st.JobsQueued++
		case JobDispatched:
			st.JobsDispatched++
		case JobBackoff:
			st.JobsBackoff++
		case JobDone:
			st.JobsDone++
		case JobFailed:
			st.JobsFailed++
		}
	}
}

// Recover calls fn with every persisted record, one per key (the last
// write wins), in a fixed order: meta records by name, then key records by
// fingerprint, then job records by id. It reads a consistent snapshot, so
// writes applied meanwhile are not seen. An error from fn stops it and is
// returned wrapped; a record that does not decode stops it with ErrCorrupt.
func (s *Store) Recover(fn func(Record) error) (Stats, error) {
	return s.RecoverWith(RecoverOptions{}, fn)
}

// RecoverOptions select records Recover leaves out. Skipped records are
// still counted in Stats, and still checked for corruption as far as their
// state; they are not decoded further.
type RecoverOptions struct {
	// SkipDoneKeys leaves out done and failed key records: a coordinator
	// that answers for them with LookupKey need not hold them in memory.
	SkipDoneKeys bool
	// SkipFinishedJobs leaves out done and failed job records.
	SkipFinishedJobs bool
	// SkipQueuedKeys leaves out queued key records (Stats.KeysQueuedLeft
	// counts them): a coordinator that pages queued jobs in from the store
	// (queue.go) looks them up on demand.
	SkipQueuedKeys bool
	// SkippedKey, when set, is called with the fingerprint of every key
	// record left out (SkipDoneKeys, SkipQueuedKeys), as it is passed
	// over: a coordinator builds its filter of keys only the store holds
	// from them without holding them all.
	SkippedKey func(fp id.Fingerprint)
	// MaxQueuedJobs, when positive, returns only the first MaxQueuedJobs
	// queued job records (by id) and leaves the others out
	// (Stats.JobsQueuedLeft, Stats.FirstJobLeft): ReadQueuedJobs reads them
	// later.
	MaxQueuedJobs int
	// SkipKeys leaves out every key record without reading any (Stats
	// counts none of them: the caller knows them from Counts).
	SkipKeys bool
	// Counts, with MaxQueuedJobs, are the store's counts (Counts): once
	// MaxQueuedJobs queued job records are read and the job ids pass
	// Counts.PlainAbove, every job record left is queued, so they are
	// counted from Counts.LastJob without reading them.
	Counts *Counts
}

// RecoverWith is Recover leaving out the records o skips.
func (s *Store) RecoverWith(o RecoverOptions, fn func(Record) error) (Stats, error) {
	var st Stats
	if err := s.enter(); err != nil {
		return st, err
	}
	defer s.leave()
	start := time.Now()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{pfxMeta}, UpperBound: []byte{pfxExpiry}})
	if err != nil {
		return st, fmt.Errorf("store %s: recover: %w", s.where(), corrupt(err))
	}
	var rec Record
	for valid := it.First(); valid; valid = it.Next() {
		k := it.Key()
		if k[0] == pfxKey && o.SkipKeys {
			st.KeysUnread = true
			if valid = it.SeekGE([]byte{pfxJob}); !valid {
				break
			}
			k = it.Key()
		}
		if k[0] == pfxJob && s.countRest(&o, k, &st) {
			break
		}
		v, verr := it.ValueAndErr()
		if verr != nil {
			err = fmt.Errorf("store %s: recover: read %x: %w", s.where(), k, corrupt(verr))
			break
		}
		skip, serr := s.skipped(&o, k, v, &st)
		if serr != nil {
			err = serr
			break
		}
		if skip {
			continue
		}
		rec = Record{}
		if err = s.decodeRecord(k, v, &rec); err != nil {
			break
		}
		st.count(&rec)
		if rec.Kind == KindJob && (rec.Job.State != JobQueued || !rec.Job.RetryAt.IsZero()) {
			st.PlainAbove = max(st.PlainAbove, rec.Job.ID)
		}
		if err = fn(rec); err != nil {
			err = fmt.Errorf("store %s: recover stopped at %s record %x: %w", s.where(), rec.Kind, k, err)
			break
		}
	}
	if ierr := it.Close(); ierr != nil && err == nil {
		err = fmt.Errorf("store %s: recover: %w", s.where(), corrupt(ierr))
	}
	st.Elapsed = time.Since(start)
	return st, err
}

// countRest reports whether the job records from k on are all queued and
// left out (RecoverOptions.Counts), counting them in st when they are.
func (s *Store) countRest(o *RecoverOptions, k []byte, st *Stats) bool {
	c := o.Counts
	if c == nil || o.MaxQueuedJobs <= 0 || st.JobsQueued < o.MaxQueuedJobs || len(k) != 9 {
		return false
	}
	j := binary.BigEndian.Uint64(k[1:])
	if j <= c.PlainAbove || j > c.LastJob {
		return false // read on: a record beyond the last job is reported as bad
	}
	n := int(c.LastJob - j + 1)
	if st.JobsQueuedLeft == 0 {
		st.FirstJobLeft = j
	}
	st.JobsQueuedLeft += n
	st.JobsQueued += n
	return true
}

// skipped reports whether o leaves out the record at k, counting it in st
// when it does.
func (s *Store) skipped(o *RecoverOptions, k, v []byte, st *Stats) (bool, error) {
	if k[0] == pfxKey && (o.SkipDoneKeys || o.SkipQueuedKeys) {
		ks, _, err := keyHead(v)
		if err != nil {
			return false, s.badRecord(KindKey, k, err)
		}
		skip := o.SkipDoneKeys && (ks == KeyDone || ks == KeyFailed) || o.SkipQueuedKeys && ks == KeyQueued
		if skip {
			st.count(&Record{Kind: KindKey, Key: KeyRecord{State: ks}})
			if ks == KeyQueued {
				st.KeysQueuedLeft++
			}
			if o.SkippedKey != nil {
				var fp id.Fingerprint
				if len(k) != 1+len(fp) {
					return false, s.badRecord(KindKey, k, fmt.Errorf("key of %d bytes, want %d", len(k), 1+len(fp)))
				}
				copy(fp[:], k[1:])
				o.SkippedKey(fp)
			}
			return true, nil
		}
	}
	if k[0] == pfxJob && (o.SkipFinishedJobs || o.MaxQueuedJobs > 0) {
		js, plain, err := jobPlain(v)
		if err != nil {
			return false, s.badRecord(KindJob, k, err)
		}
		switch {
		case o.SkipFinishedJobs && (js == JobDone || js == JobFailed):
			st.count(&Record{Kind: KindJob, Job: JobRecord{State: js}})
			if len(k) == 9 {
				st.PlainAbove = max(st.PlainAbove, binary.BigEndian.Uint64(k[1:]))
			}
			return true, nil
		case o.MaxQueuedJobs > 0 && js == JobQueued && st.JobsQueued >= o.MaxQueuedJobs:
			st.count(&Record{Kind: KindJob, Job: JobRecord{State: js}})
			if !plain && len(k) == 9 {
				st.PlainAbove = max(st.PlainAbove, binary.BigEndian.Uint64(k[1:]))
			}
			if st.JobsQueuedLeft == 0 && len(k) == 9 {
				st.FirstJobLeft = binary.BigEndian.Uint64(k[1:])
			}
			st.JobsQueuedLeft++
			return true, nil
		}
	}
	return false, nil
}

// decodeRecord decodes the record stored at k.
func (s *Store) decodeRecord(k, v []byte, rec *Record) error {
	switch k[0] {
	case pfxMeta:
		rec.Kind = KindMeta
		rec.Meta.Name = string(k[1:])
		n, err := decodeUint64(v)
		if err != nil {
			return s.badRecord(KindMeta, k, err)
		}
		rec.Meta.Value = n
	case pfxKey:
		rec.Kind = KindKey
		if len(k) != 1+len(rec.Key.FP) {
			return s.badRecord(KindKey, k, fmt.Errorf("key of %d bytes, want %d", len(k), 1+len(rec.Key.FP)))
		}
		copy(rec.Key.FP[:], k[1:])
		if err := decodeKey(v, &rec.Key); err != nil {
			return s.badRecord(KindKey, k, err)
		}
	case pfxJob:
		rec.Kind = KindJob
		if len(k) != 9 {
			return s.badRecord(KindJob, k, fmt.Errorf("key of %d bytes, want 9", len(k)))
		}
		rec.Job.ID = binary.BigEndian.Uint64(k[1:])
		if err := decodeJob(v, &rec.Job); err != nil {
			return s.badRecord(KindJob, k, err)
		}
	default:
		return fmt.Errorf("store %s: %w: key %x outside every record space", s.where(), ErrCorrupt, k)
	}
	return nil
}

// scan calls fn with every record in [lower, upper), in key order, until
// fn returns false or an error (which scan returns); what names the read
// in its errors. k and v are valid only during the call.
func (s *Store) scan(lower, upper []byte, what string, fn func(k, v []byte) (more bool, err error)) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("store %s: %s: %w", s.where(), what, corrupt(err))
	}
	more := true
	for valid := it.First(); valid && more && err == nil; valid = it.Next() {
		k := it.Key()
		v, verr := it.ValueAndErr()
		if verr != nil {
			err = fmt.Errorf("store %s: %s %x: %w", s.where(), what, k, corrupt(verr))
			break
		}
		more, err = fn(k, v)
	}
	if cerr := it.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("store %s: %s: %w", s.where(), what, corrupt(cerr))
	}
	return err
}
