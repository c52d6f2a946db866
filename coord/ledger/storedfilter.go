package ledger

import (
	"github.com/bits-and-blooms/bloom/v3"

	"drover/coord/id"
)

// The stored-key filter (issue 21, Config.StoredFilter): a key that is
// neither in memory nor in the caller's store is absent, and the caller
// need not read its store to learn that. The ledger keeps a Bloom filter
// of every key it let go to the store while the store still holds it
// (done keys a bounded done set evicted, queued keys paged out:
// NoteStored), and of every key a restore left there (the caller passes
// each with NoteStored as its recovery skips it: streamed, never all in
// memory). MaybeStored answers false only for a key the store cannot
// hold: the caller treats it as absent without a read; true may be a
// false positive, and then the read finds nothing, as it would have
// without the filter. Dedup stays exact; the filter only saves reads.
//
// Keys are never taken out (a Bloom filter cannot forget): a key given
// back to memory stays in, and costs a read the next time memory does not
// know it, if ever. The filter grows in stages (a scalable Bloom filter):
// the first holds Config.StoredFilter keys at a false-positive rate of
// 0.4%, each further stage twice as many keys at half the rate of the one
// before, so the rate over all stages stays below 0.8% however many keys
// are added, at about 11.5 + 1.44 × (stage number) bits a key.

// storedFilterRate is the false-positive rate of the first stage.
const storedFilterRate = 0.004

// storedFilter is the ledger's filter of keys its store may hold.
type storedFilter struct {
	stages []*bloom.BloomFilter
	room   uint    // keys the last stage takes before the next one starts
	next   uint    // the capacity of the next stage
	rate   float64 // the false-positive rate of the last stage
	n      int     // keys added
}

func newStoredFilter(capacity int) *storedFilter {
	f := &storedFilter{next: uint(max(capacity, 1024)), rate: storedFilterRate * 2}
	f.grow()
	return f
}

func (f *storedFilter) grow() {
	f.rate /= 2
	f.stages = append(f.stages, bloom.NewWithEstimates(f.next, f.rate))
	f.room = f.next
	f.next *= 2
}

func (f *storedFilter) add(fp *id.Fingerprint) {
	if f.room == 0 {
		f.grow()
	}
	f.stages[len(f.stages)-1].Add(fp[:])
	f.room--
	f.n++
}

func (f *storedFilter) test(fp *id.Fingerprint) bool {
	for _, s := range f.stages {
		if s.Test(fp[:]) {
			return true
		}
	}
	return false
}

// bytes is the memory the filter's bits take.
func (f *storedFilter) bytes() int {
	n := 0
	for _, s := range f.stages {
		n += int(s.Cap() / 8)
	}
	return n
}

// NoteStored tells a ledger with a stored-key filter (Config.StoredFilter)
// that its caller's store holds a record of fp which memory may not: a
// key the caller took out of memory itself (a queued key paged out), or
// one its restore left in the store. Without a filter it does nothing.
func (l *Ledger) NoteStored(fp id.Fingerprint) {
	if l.stored != nil {
		l.stored.add(&fp)
	}
}

// MaybeStored reports whether the caller's store may hold a record of fp
// that memory does not (Known false): always true without a stored-key
// filter (Config.StoredFilter); with one, false means the store holds no
// record of fp, so the key is absent without reading the store.
func (l *Ledger) MaybeStored(fp id.Fingerprint) bool {
	return l.stored == nil || l.stored.test(&fp)
}

// StoredFilterStats are the stored-key filter's keys and bytes (0 without
// one).
type StoredFilterStats struct {
	Keys, Bytes, Stages int
}

// StoredFilter reports the stored-key filter's size.
func (l *Ledger) StoredFilter() StoredFilterStats {
	if l.stored == nil {
		return StoredFilterStats{}
	}
	return StoredFilterStats{Keys: l.stored.n, Bytes: l.stored.bytes(), Stages: len(l.stored.stages)}
}
