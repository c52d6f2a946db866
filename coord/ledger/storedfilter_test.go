package ledger

import (
	"encoding/binary"
	"testing"

	"drover/coord/id"
)

// TestStoredFilterRate adds keys well past the first stage's capacity:
// every key added tests positive (no false negative, in any stage), and
// of as many keys never added fewer than 1% test positive.
func TestStoredFilterRate(t *testing.T) {
	const capacity, n = 2000, 60_000 // five stages
	fp := func(i int) id.Fingerprint {
		return id.Key{Crawler: "c", Processor: "p", URL: "http://filter.test/" + string(binary.AppendUvarint(nil, uint64(i)))}.Fingerprint()
	}
	l, err := New(Config{Persist: true, StoredFilter: capacity})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		l.NoteStored(fp(i))
	}
	for i := range n {
		if !l.MaybeStored(fp(i)) {
			t.Fatalf("key %d added, MaybeStored false", i)
		}
	}
	pos := 0
	for i := n; i < 2*n; i++ {
		if l.MaybeStored(fp(i)) {
			pos++
		}
	}
	st := l.StoredFilter()
	t.Logf("%d keys in %d stages, %d bytes (%.1f bits a key); false positives %d of %d (%.3f%%)", st.Keys, st.Stages, st.Bytes, float64(st.Bytes*8)/n, pos, n, 100*float64(pos)/n)
	if st.Keys != n || st.Stages < 4 {
		t.Fatalf("filter %+v: want %d keys in several stages", st, n)
	}
	if pos*100 >= n {
		t.Fatalf("%d false positives of %d keys never added: want below 1%%", pos, n)
	}
	if _, err := New(Config{StoredFilter: 10}); err == nil {
		t.Fatal("StoredFilter without Persist accepted")
	}
	if l, _ := New(Config{Persist: true}); !l.MaybeStored(fp(1)) {
		t.Fatal("without a filter MaybeStored must say maybe")
	}
}
