package store

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"drover/coord/id"
)

// Persisted counts (issue 21): a coordinator that keeps most of its queued
// jobs and keys only here would otherwise have to read every key and job
// record at a restart just to count them. Instead it writes its counts
// with every batch (PutCounts), in the same atomic write as the records
// they count, so that after a crash the last durable batch's counts match
// the records exactly; a restart reads them (Counts), the records it keeps
// in memory, and nothing else (RecoverOptions.SkipKeys, PlainAbove).
//
// The counts are stamped with the epoch of the Open that wrote them: only
// those of the previous Open (or of this one) are returned, so a store
// written meanwhile by a program that does not keep them (an older drover,
// an offline tool) is counted the slow way, by reading it.

// Counts are the figures a coordinator persists with each batch.
type Counts struct {
	// KeysQueued is the number of queued key records.
	KeysQueued uint64
	// KeysDone is the number of done and failed key records, as the
	// coordinator counts them (the store's sweeper deletes expired ones
	// on its own: the count may be ahead of the records by those).
	KeysDone uint64
	// LastJob is the highest job id allocated; every id up to it that is
	// above PlainAbove has a job record.
	LastJob uint64
	// PlainAbove is a job id above which every job record is queued with
	// no retry time: at least the highest id of a job record ever written
	// in another state.
	PlainAbove uint64
}

// countsVersion is the first byte of the counts value.
const countsVersion = 1

// internalCounts names the counts' internal key.
const internalCounts = "counts"

func encodeCounts(b []byte, epoch uint64, c *Counts) []byte {
	b = append(b, countsVersion)
	for _, v := range [...]uint64{epoch, c.KeysQueued, c.KeysDone, c.LastJob, c.PlainAbove} {
		b = binary.AppendUvarint(b, v)
	}
	return b
}

func decodeCounts(v []byte) (epoch uint64, c Counts, err error) {
	d := decoder{b: v}
	if ver := d.byte(); d.err == nil && ver != countsVersion {
		d.fail(fmt.Errorf("counts version %d: want %d", ver, countsVersion))
	}
	epoch = d.uvarint()
	c.KeysQueued = d.uvarint()
	c.KeysDone = d.uvarint()
	c.LastJob = d.uvarint()
	c.PlainAbove = d.uvarint()
	if err := d.end(); err != nil {
		return 0, Counts{}, err
	}
	if c.PlainAbove > c.LastJob {
		return 0, Counts{}, fmt.Errorf("counts: plain above job %d, beyond the last job %d", c.PlainAbove, c.LastJob)
	}
	return epoch, c, nil
}

// PutCounts records c as the counts of the records the store holds once
// the batch is written (replacing those of earlier batches).
func (b *Batch) PutCounts(c Counts) error {
	var err error
	if c.PlainAbove > c.LastJob {
		err = fmt.Errorf("store: counts: plain above job %d, beyond the last job %d: want at most it", c.PlainAbove, c.LastJob)
	}
	if err := b.check(err); err != nil {
		return err
	}
	b.buf = encodeCounts(b.buf[:0], b.s.epoch, &c)
	return b.set(internalKey(internalCounts), b.buf)
}

// Counts returns the counts the last batch of the previous Open (or of
// this one) recorded with PutCounts; ok is false when there are none, or
// when they are older (an Open in between did not keep them): then only
// reading the records counts them.
func (s *Store) Counts() (c Counts, ok bool, err error) {
	if err := s.enter(); err != nil {
		return Counts{}, false, err
	}
	defer s.leave()
	var epoch uint64
	found, err := s.get(internalKey(internalCounts), func(v []byte) error {
		var derr error
		if epoch, c, derr = decodeCounts(v); derr != nil {
			return s.badRecord(KindMeta, internalKey(internalCounts), derr)
		}
		return nil
	})
	if err != nil || !found || epoch+1 < s.epoch || epoch > s.epoch {
		return Counts{}, false, err
	}
	return c, true, nil
}

// KeyScan is what ScanKeys counted: the key records by state, and the
// store's counts as of the same moment (CountsOK false: none usable).
type KeyScan struct {
	Queued, Done int // queued; done or failed
	Counts       Counts
	CountsOK     bool
}

// ScanKeys calls fn with the fingerprints and states of every key record,
// in key order, in slices of up to batch (fn may keep them), from one consistent
// view of the store, and returns the records' counts with the store's
// Counts in the same view, so that the difference between them is exact.
// A coordinator that restored from Counts alone rebuilds its filter of
// stored keys with it in the background. It stops early, returning
// ErrClosed, once stop is closed.
func (s *Store) ScanKeys(stop <-chan struct{}, batch int, fn func(fps []id.Fingerprint, states []KeyState) error) (KeyScan, error) {
	var ks KeyScan
	if err := s.enter(); err != nil {
		return ks, err
	}
	defer s.leave()
	batch = max(batch, 1)
	ck := internalKey(internalCounts)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: ck, UpperBound: []byte{pfxJob}})
	if err != nil {
		return ks, fmt.Errorf("store %s: scan keys: %w", s.where(), corrupt(err))
	}
	if it.SeekGE(ck) && bytes.Equal(it.Key(), ck) {
		v, verr := it.ValueAndErr()
		if verr != nil {
			err = fmt.Errorf("store %s: scan keys: read the counts: %w", s.where(), corrupt(verr))
		} else if epoch, c, derr := decodeCounts(v); derr != nil {
			err = s.badRecord(KindMeta, ck, derr)
		} else if epoch+1 >= s.epoch && epoch <= s.epoch {
			ks.Counts, ks.CountsOK = c, true
		}
	}
	fps, states := make([]id.Fingerprint, 0, batch), make([]KeyState, 0, batch)
	for valid := err == nil && it.SeekGE([]byte{pfxKey}); valid; valid = it.Next() {
		k := it.Key()
		if len(k) != 17 {
			err = s.badRecord(KindKey, k, fmt.Errorf("key of %d bytes, want 17", len(k)))
			break
		}
		v, verr := it.ValueAndErr()
		if verr != nil {
			err = fmt.Errorf("store %s: scan keys: read %x: %w", s.where(), k, corrupt(verr))
			break
		}
		st, _, herr := keyHead(v)
		if herr != nil {
			err = s.badRecord(KindKey, k, herr)
			break
		}
		if st == KeyQueued {
			ks.Queued++
		} else {
			ks.Done++
		}
		fps, states = append(fps, id.Fingerprint(k[1:])), append(states, st)
		if len(fps) == batch {
			if err = fn(fps, states); err != nil {
				break
			}
			fps, states = make([]id.Fingerprint, 0, batch), make([]KeyState, 0, batch)
			select {
			case <-stop:
				err = ErrClosed
			default:
			}
			if err != nil {
				break
			}
		}
	}
	if err == nil && len(fps) > 0 {
		err = fn(fps, states)
	}
	if cerr := it.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("store %s: scan keys: %w", s.where(), corrupt(cerr))
	}
	return ks, err
}
