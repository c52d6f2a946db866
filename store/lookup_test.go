package store

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"drover/coord/id"
)

// TestLookupKeysAgreesWithGetKey: the batched lookup answers each
// fingerprint with the state and time of its stored record, in any order,
// found or not.
func TestLookupKeysAgreesWithGetKey(t *testing.T) {
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
	found := 0
	for _, k := range ks {
		r, ok, err := s.GetKey(k.FP)
		if err != nil {
			t.Fatal(err)
		}
		if k.Found != ok || (ok && (k.State != r.State || !k.At.Equal(r.At))) {
			t.Errorf("%s: looked up %v %v %v, stored record %v %v %v", k.FP, k.Found, k.State, k.At, ok, r.State, r.At)
		}
		if ok {
			found++
		}
	}
	if found != 17 { // of 99, 96, … 0: those below 50
		t.Errorf("found %d of %d fingerprints, want 17", found, len(ks))
	}
}

// TestGetKeysAgreesWithGetKey: the batched read calls back with each
// stored record of the fingerprints asked for, as GetKey reads it, in the
// order asked, and passes over the ones the store does not hold.
func TestGetKeysAgreesWithGetKey(t *testing.T) {
	s := memT(t)
	at := time.Unix(1_700_000_000, 0).UTC()
	commitT(t, s, func(b *Batch) error {
		for i := range 50 {
			r := keyRec(i, KeyQueued, at.Add(time.Duration(i)*time.Second))
			if err := b.PutKey(&r); err != nil {
				return err
			}
		}
		return nil
	})
	var fps []id.Fingerprint
	for i := 0; i < 100; i += 3 { // half of them absent
		fps = append(fps, testFP(i))
	}
	slices.SortFunc(fps, func(a, b id.Fingerprint) int { return bytes.Compare(a[:], b[:]) })
	var got []id.Fingerprint
	if err := s.GetKeys(fps, func(r *KeyRecord) error {
		want, ok, err := s.GetKey(r.FP)
		if err != nil || !ok || want.Key != r.Key || want.State != r.State || !want.At.Equal(r.At) {
			t.Errorf("%s: read %+v, GetKey %+v %v %v", r.FP, *r, want, ok, err)
		}
		got = append(got, r.FP)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var want []id.Fingerprint
	for _, fp := range fps {
		if _, ok, _ := s.GetKey(fp); ok {
			want = append(want, fp)
		}
	}
	if len(want) != 17 || !slices.Equal(got, want) {
		t.Fatalf("read %d records %v, want the %d stored of those asked, in order: %v", len(got), got, len(want), want)
	}
}
