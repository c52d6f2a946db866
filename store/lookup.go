package store

import (
	"bytes"
	"fmt"
	"time"

	"drover/coord/id"
)

// KeyLookup is the state of one fingerprint, as LookupKeys reports it.
type KeyLookup struct {
	FP    id.Fingerprint
	State KeyState
	At    time.Time
	Found bool // false: the store has no record of FP
}

// LookupKeys is LookupKey for many fingerprints with one iterator: it
// fills in State, At and Found of every element of ks (FP set by the
// caller). Sorted fingerprints make the seeks move forward; any order is
// answered.
func (s *Store) LookupKeys(ks []KeyLookup) error {
	if len(ks) == 0 {
		return nil
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	it, err := s.db.NewIter(&lookupOptions)
	if err != nil {
		return fmt.Errorf("store %s: lookup %d keys: %w", s.where(), len(ks), corrupt(err))
	}
	var kb [17]byte
	kb[0] = pfxKey
	for i := range ks {
		k := &ks[i]
		copy(kb[1:], k.FP[:])
		k.Found = false
		if !it.SeekPrefixGE(kb[:]) || !bytes.Equal(it.Key(), kb[:]) {
			continue
		}
		v, verr := it.ValueAndErr()
		if verr != nil {
			err = fmt.Errorf("store %s: lookup %s: %w", s.where(), k.FP, corrupt(verr))
			break
		}
		st, n, derr := keyHead(v)
		if derr != nil {
			err = s.badRecord(KindKey, kb[:], derr)
			break
		}
		k.State, k.At, k.Found = st, unstamp(n), true
	}
	if cerr := it.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("store %s: lookup %d keys: %w", s.where(), len(ks), corrupt(cerr))
	}
	return err
}

// GetKeys is GetKey for many fingerprints with one iterator: it calls fn
// with the record of each of fps the store holds, in the order of fps
// (sorted, the seeks move forward: a restore reading back the keys of the
// jobs it keeps spent a third of its time in 100,000 separate reads). An
// error from fn stops it and is returned.
func (s *Store) GetKeys(fps []id.Fingerprint, fn func(*KeyRecord) error) error {
	if len(fps) == 0 {
		return nil
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	it, err := s.db.NewIter(&lookupOptions)
	if err != nil {
		return fmt.Errorf("store %s: read %d keys: %w", s.where(), len(fps), corrupt(err))
	}
	var kb [17]byte
	kb[0] = pfxKey
	var r KeyRecord
	for _, fp := range fps {
		copy(kb[1:], fp[:])
		if !it.SeekPrefixGE(kb[:]) || !bytes.Equal(it.Key(), kb[:]) {
			continue
		}
		v, verr := it.ValueAndErr()
		if verr != nil {
			err = fmt.Errorf("store %s: read %s: %w", s.where(), fp, corrupt(verr))
			break
		}
		r = KeyRecord{FP: fp}
		if derr := decodeKey(v, &r); derr != nil {
			err = s.badRecord(KindKey, kb[:], derr)
			break
		}
		if err = fn(&r); err != nil {
			break
		}
	}
	if cerr := it.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("store %s: read %d keys: %w", s.where(), len(fps), corrupt(cerr))
	}
	return err
}
