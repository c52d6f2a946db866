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
	for i := range ks {
		ks[i].Found = false
	}
	return s.seekKeys("lookup", len(ks), func(i int) id.Fingerprint { return ks[i].FP }, func(i int, kb, v []byte) error {
		st, n, derr := keyHead(v)
		if derr != nil {
			return s.badRecord(KindKey, kb, derr)
		}
		ks[i].State, ks[i].At, ks[i].Found = st, unstamp(n), true
		return nil
	})
}

// GetKeys is GetKey for many fingerprints with one iterator: it calls fn
// with the record of each of fps the store holds, in the order of fps
// (sorted, the seeks move forward: a restore reading back the keys of the
// jobs it keeps spent a third of its time in 100,000 separate reads). An
// error from fn stops it and is returned.
func (s *Store) GetKeys(fps []id.Fingerprint, fn func(*KeyRecord) error) error {
	var r KeyRecord
	return s.seekKeys("read", len(fps), func(i int) id.Fingerprint { return fps[i] }, func(i int, kb, v []byte) error {
		r = KeyRecord{FP: fps[i]}
		if derr := decodeKey(v, &r); derr != nil {
			return s.badRecord(KindKey, kb, derr)
		}
		return fn(&r)
	})
}

// seekKeys walks the key records of n fingerprints (fp(i) the i-th) with
// one iterator, calling found with the index, the record's store key and
// its value for each the store holds; the first error stops it. what
// names the walk in errors.
func (s *Store) seekKeys(what string, n int, fp func(int) id.Fingerprint, found func(i int, kb, v []byte) error) error {
	if n == 0 {
		return nil
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	it, err := s.db.NewIter(&lookupOptions)
	if err != nil {
		return fmt.Errorf("store %s: %s %d keys: %w", s.where(), what, n, corrupt(err))
	}
	var kb [17]byte
	kb[0] = pfxKey
	for i := 0; i < n; i++ {
		f := fp(i)
		copy(kb[1:], f[:])
		if !it.SeekPrefixGE(kb[:]) || !bytes.Equal(it.Key(), kb[:]) {
			continue
		}
		v, verr := it.ValueAndErr()
		if verr != nil {
			err = fmt.Errorf("store %s: %s %s: %w", s.where(), what, f, corrupt(verr))
			break
		}
		if err = found(i, kb[:], v); err != nil {
			break
		}
	}
	if cerr := it.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("store %s: %s %d keys: %w", s.where(), what, n, corrupt(cerr))
	}
	return err
}
