package store

import (
	"testing"
	"time"
)

// TestLookupKeysAgreesWithLookupKey: the batched lookup answers each
// fingerprint as LookupKey does, in any order, found or not.
func TestLookupKeysAgreesWithLookupKey(t *testing.T) {
	s := memT(t)
	at := time.Unix(1_700_000_000, 0).UTC()
	commitT(t, s, func(b *Batch) error {
		for i := range 50 {
			st := KeyDone
			if i%3 == 1 {
				st = KeyFailed
			} else if i%3 == 2 {
				st = KeyQueued
			}
			r := keyRec(i, st, at.Add(time.Duration(i)*time.Second))
			if err := b.PutKey(&r); err != nil {
				return err
			}
		}
		return nil
	})
	var ks []KeyLookup
	for i := 99; i >= 0; i -= 3 { // descending, half of them absent
		ks = append(ks, KeyLookup{FP: testFP(i)})
	}
	if err := s.LookupKeys(ks); err != nil {
		t.Fatal(err)
	}
	for _, k := range ks {
		st, at, ok, err := s.LookupKey(k.FP)
		if err != nil {
			t.Fatal(err)
		}
		if k.Found != ok || (ok && (k.State != st || !k.At.Equal(at))) {
			t.Errorf("%s: batched %v %v %v, single %v %v %v", k.FP, k.Found, k.State, k.At, ok, st, at)
		}
	}
}
