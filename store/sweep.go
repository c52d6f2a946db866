package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"drover/coord/id"
)

// sweepStep bounds the records one sweep step examines (it ends after the
// entry that reaches it; a grouped entry names up to maxGroupIdents): a
// step runs on the writer goroutine between groups of batches, so it is
// the longest a writer waits for the sweeper.
const sweepStep = 256

// Sweep deletes the done and failed records whose TTL has run out at now:
// a done key record expires when now >= At + doneTTL, a done job record
// when now >= Updated + doneTTL, and failed ones with failedTTL. A TTL of 0
// keeps records forever. It walks the expiry index in time order, in steps
// of at most 256 entries, each written on the writer goroutine between
// groups of Apply, so writes never wait for more than one step. It returns
// the number of records deleted.
//
// Deletions are written without an fsync of their own (a lost deletion
// is redone by the next sweep).
func (s *Store) Sweep(now time.Time, doneTTL, failedTTL time.Duration) (int, error) {
	return s.SweepKeys(now, doneTTL, failedTTL, nil)
}

// SweepKeys is Sweep, calling keys (on the caller's goroutine) with the
// fingerprints of the done and failed key records each step deleted: a
// coordinator that keeps only some done keys in memory counts the others
// by them.
func (s *Store) SweepKeys(now time.Time, doneTTL, failedTTL time.Duration, keys func([]id.Fingerprint)) (int, error) {
	if doneTTL < 0 || failedTTL < 0 {
		return 0, fmt.Errorf("store: sweep with TTLs done %v, failed %v: want 0 (forever) or positive", doneTTL, failedTTL)
	}
	total := 0
	for _, c := range []struct {
		class byte
		ttl   time.Duration
	}{
		{classKeyDone, doneTTL}, {classKeyFailed, failedTTL},
		{classJobDone, doneTTL}, {classJobFailed, failedTTL},
	} {
		if c.ttl == 0 {
			continue
		}
		cutoff := stamp(now)
		if cutoff < math.MinInt64+int64(c.ttl) {
			continue // nothing can be that old
		}
		cutoff = cutoff - int64(c.ttl) + 1 // expired: at <= now - ttl
		for {
			var st sweepResult
			if err := s.do(func(w *writer) { st = s.sweepStep(w, c.class, cutoff) }); err != nil {
				return total, err
			}
			total += st.deleted
			if keys != nil && len(st.keys) > 0 {
				keys(st.keys)
			}
			if st.err != nil {
				return total, st.err
			}
			if !st.more {
				break
			}
		}
	}
	return total, nil
}

type sweepResult struct {
	deleted int
	keys    []id.Fingerprint // of the key records deleted (key classes)
	more    bool
	err     error
}

// sweepStep examines the index entries of class older than cutoff, from
// the writer's floor on, until it has examined sweepStep records: each
// record still in the indexed state at the indexed time is deleted; every
// examined entry is deleted by one range deletion from the floor, and the
// floor moves past them, so later steps and sweeps start after the tombstones.
// It runs on the writer goroutine, so no batch lands between its reads and
// its writes.
func (s *Store) sweepStep(w *writer, class byte, cutoff int64) (res sweepResult) {
	lower := w.floor[class]
	if lower == nil {
		lower = []byte{pfxExpiry, class}
	}
	upper := expiryBound(class, cutoff)
	if bytes.Compare(lower, upper) >= 0 {
		return res // everything that old is gone already
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		res.err = fmt.Errorf("store %s: sweep: %w", s.where(), corrupt(err))
		return res
	}
	n := identLen(class)
	b := s.db.NewBatch()
	defer b.Close()
	var last []byte
	examined := 0
	// gone holds the idents of the records this step deletes: b is applied
	// only when the step ends, so a record with two entries of one time
	// (written done at the same time twice) would still look live at its
	// second entry and be counted and reported twice.
	gone := map[string]struct{}{}
	valid := it.First()
	for ; valid && examined < sweepStep; valid = it.Next() {
		k := it.Key()
		var idents []byte
		switch len(k) {
		case 10 + n:
			idents = k[10:]
		case 10 + groupIdentLen:
			v, err := it.ValueAndErr()
			if err == nil && (len(v) == 0 || len(v)%n != 0) {
				err = fmt.Errorf("%w: grouped expiry entry %x: value of %d bytes, want a multiple of %d", ErrCorrupt, k, len(v), n)
			}
			if err != nil {
				res.err = fmt.Errorf("store %s: sweep: %w", s.where(), corrupt(err))
			}
			idents = v
		default:
			res.err = fmt.Errorf("store %s: %w: expiry entry %x of %d bytes, want %d or %d", s.where(), ErrCorrupt, k, len(k), 10+n, 10+groupIdentLen)
		}
		if res.err != nil {
			break
		}
		at := int64(binary.BigEndian.Uint64(k[2:10]) ^ (1 << 63))
		for ; len(idents) > 0 && res.err == nil; idents = idents[n:] {
			ident := idents[:n]
			examined++
			if _, ok := gone[string(ident)]; ok {
				continue // a second entry of the record at this time: b deletes it already
			}
			rk, live, err := s.expired(class, at, ident)
			if err != nil {
				res.err = err
				break
			}
			if live {
				_ = b.Delete(rk, nil)
				gone[string(ident)] = struct{}{}
				res.deleted++
				if n == len(id.Fingerprint{}) {
					res.keys = append(res.keys, id.Fingerprint(ident))
				}
			}
		}
		if res.err != nil {
			break
		}
		last = append(last[:0], k...)
	}
	res.more = valid && res.err == nil
	if err := it.Close(); err != nil && res.err == nil {
		res.err = fmt.Errorf("store %s: sweep: %w", s.where(), corrupt(err))
	}
	if last == nil {
		return res
	}
	next := append(last, 0)
	_ = b.DeleteRange(lower, next, nil)
	if err := s.pebbleApply(b, pebble.NoSync); err != nil {
		w.fail(err)
		res.deleted, res.keys, res.err = 0, nil, s.sticky()
		return res
	}
	w.floor[class] = next
	if !s.opts.Memory {
		w.dirty = true // synced with the next batch, or at Close
	}
	return res
}

// expired looks up the record an expiry entry points at and reports
// whether it is still in the entry's state at the entry's time (so it is
// the record to delete), with the record's key.
func (s *Store) expired(class byte, at int64, ident []byte) (rk []byte, live bool, err error) {
	rk = make([]byte, 0, 1+len(ident))
	kind := KindKey
	if class == classKeyDone || class == classKeyFailed {
		rk = append(rk, pfxKey)
	} else {
		rk = append(rk, pfxJob)
		kind = KindJob
	}
	rk = append(rk, ident...)
	_, err = s.get(rk, func(v []byte) error {
		var st byte
		var n int64
		var derr error
		if kind == KindKey {
			var ks KeyState
			ks, n, derr = keyHead(v)
			st = byte(ks)
		} else {
			var js JobState
			js, n, derr = jobHead(v)
			st = byte(js)
		}
		if derr != nil {
			return s.badRecord(kind, rk, derr)
		}
		live = st == classState(class) && n == at
		return nil
	})
	return rk, live, err
}

// classState is the state an expiry class indexes.
func classState(class byte) byte {
	switch class {
	case classKeyDone:
		return byte(KeyDone)
	case classKeyFailed:
		return byte(KeyFailed)
	case classJobDone:
		return byte(JobDone)
	case classJobFailed:
		return byte(JobFailed)
	}
	return 0
}
