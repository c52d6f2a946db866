package store

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/cockroachdb/pebble/v2"
)

// Queued jobs beyond RAM (issue 21, store.resident_jobs): a coordinator
// may keep only some of its queued jobs in memory and leave the others
// here. Job records are keyed by id, big-endian, so the store's order is
// the jobs' submission order: the coordinator reads the next ones with
// ReadQueuedJobs, from where it left off, in batches.

// ReadQueuedJobs calls fn with up to max queued job records whose ids are
// above after, in ascending id order, and returns the id of the last job
// record it read (queued or not; after itself when there was none) and how
// many it passed to fn. Records in other states are passed over. It reads
// what is applied, durable or not; a record that does not decode stops it
// with ErrCorrupt, and an error from fn stops it and is returned wrapped.
func (s *Store) ReadQueuedJobs(after uint64, max int, fn func(*JobRecord) error) (last uint64, n int, err error) {
	last = after
	if max <= 0 || after == math.MaxUint64 {
		return last, 0, nil
	}
	if err := s.enter(); err != nil {
		return last, 0, err
	}
	defer s.leave()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: jobKey(after + 1), UpperBound: []byte{pfxJob + 1}})
	if err != nil {
		return last, 0, fmt.Errorf("store %s: read queued jobs: %w", s.where(), corrupt(err))
	}
	var r JobRecord
	for valid := it.First(); valid && n < max; valid = it.Next() {
		k := it.Key()
		if len(k) != 9 {
			err = s.badRecord(KindJob, k, fmt.Errorf("key of %d bytes, want 9", len(k)))
			break
		}
		v, verr := it.ValueAndErr()
		if verr != nil {
			err = fmt.Errorf("store %s: read queued jobs: read %x: %w", s.where(), k, corrupt(verr))
			break
		}
		last = binary.BigEndian.Uint64(k[1:])
		js, _, herr := jobHead(v)
		if herr != nil {
			err = s.badRecord(KindJob, k, herr)
			break
		}
		if js != JobQueued {
			continue
		}
		r = JobRecord{ID: last}
		if derr := decodeJob(v, &r); derr != nil {
			err = s.badRecord(KindJob, k, derr)
			break
		}
		n++
		if ferr := fn(&r); ferr != nil {
			err = fmt.Errorf("store %s: read queued jobs: job %d: %w", s.where(), last, ferr)
			break
		}
	}
	if ierr := it.Close(); ierr != nil && err == nil {
		err = fmt.Errorf("store %s: read queued jobs: %w", s.where(), corrupt(ierr))
	}
	return last, n, err
}
