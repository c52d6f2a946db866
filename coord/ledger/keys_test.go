package ledger

import (
	"math/rand/v2"
	"strings"
	"testing"

	"drover/coord/id"
)

// TestKeysRoundTrip keeps keys of every URL size class, the edges of the
// slab and the long strings included, frees some, reuses their slots and
// checks that every live record gives back its key exactly.
func TestKeysRoundTrip(t *testing.T) {
	h := newHarness(t, Config{})
	lengths := []int{1, 7, 8, 9, 16, 17, 255, 256, 257, 1000, 9000}
	var keys []id.Key
	for i, n := range lengths {
		for j := range 3 {
			prefix := "http://k.test/" + string(rune('a'+i)) + string(rune('a'+j))
			k := id.Key{Crawler: "c" + string(rune('0'+j)), Processor: "p", URL: prefix + strings.Repeat("x", max(0, n-len(prefix)))}
			if n < len(prefix) {
				k.URL = prefix[:n]
			}
			keys = append(keys, k)
		}
	}
	keys = append(keys, id.Key{}) // empty names and URL
	for i, k := range keys {
		if v, r := h.l.Request(h.now, 1, uint64(i), k, k.Fingerprint()); v != OK {
			t.Fatalf("request %d: %v %v, want ok", i, v, r)
		}
	}
	// Free every other key, then request new keys into the freed slots.
	for i := 0; i < len(keys); i += 2 {
		h.l.Done(h.now, keys[i], keys[i].Fingerprint(), DoneOK)
	}
	for i := 0; i < len(keys); i += 2 {
		keys[i].URL += "/again"
		keys[i].Processor = "q"
		if v, r := h.l.Request(h.now, 2, uint64(i), keys[i], keys[i].Fingerprint()); v != OK {
			t.Fatalf("request %d again: %v %v, want ok", i, v, r)
		}
	}
	h.checked()
	for i, k := range keys {
		rec, ok := h.l.Lookup(h.now, k.Fingerprint())
		if !ok || rec.Key != k {
			t.Fatalf("key %d: Lookup = %+v, %v; want the key %+v back", i, rec.Key, ok, k)
		}
	}
	for _, k := range keys {
		h.l.Done(h.now, k, k.Fingerprint(), DoneOK)
	}
	h.checked()
	if n := h.l.keys.pairs.Len(); n != 0 {
		t.Fatalf("%d name pairs still interned with no live key", n)
	}
}

// TestIndexChurn drives the fingerprint index through growth and heavy
// churn against a map, checking its structure as it goes.
func TestIndexChurn(t *testing.T) {
	l, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	live := make(map[id.Fingerprint]bool)
	k := id.Key{Crawler: "c", Processor: "p", URL: "http://x.test/"}
	var universe []id.Fingerprint
	for i := range 5000 {
		universe = append(universe, nthFP(uint64(i)))
	}
	for step := range 40000 {
		fp := universe[rng.IntN(len(universe))]
		if live[fp] {
			l.Done(base, k, fp, DoneOK)
			delete(live, fp)
		} else {
			l.Requeue(base, k, fp)
			live[fp] = true
		}
		if step%997 == 0 {
			if err := l.check(); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
		l.TakeEvents(nil)
	}
	for _, fp := range universe {
		if got := l.idx.get(&fp) != 0; got != live[fp] {
			t.Fatalf("fingerprint %s indexed %v, live %v", fp, got, live[fp])
		}
	}
	if err := l.check(); err != nil {
		t.Fatal(err)
	}
}
