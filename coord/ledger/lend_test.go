package ledger

import (
	"strings"
	"testing"

	"drover/coord/id"
	"drover/coord/offheap"
)

// TestLendAndReclaim lends queued keys' URLs to a holder, reads the keys
// back through it, reclaims some, drops the others, and checks that every
// slab slot comes back and a key reads the same throughout.
func TestLendAndReclaim(t *testing.T) {
	h := newHarness(t, Config{})
	held := map[id.Fingerprint]string{}
	h.l.SetLender(func(fp id.Fingerprint) (string, bool) { u, ok := held[fp]; return u, ok })
	var keys []id.Key
	for i, n := range []int{0, 9, 40, 256, 300} {
		keys = append(keys, id.Key{Crawler: "c", Processor: "p", URL: strings.Repeat(string(rune('a'+i)), n)})
	}
	for i, k := range keys {
		fp := k.Fingerprint()
		if v, r := h.l.Request(h.now, 1, uint64(i), k, fp); v != OK {
			t.Fatalf("request %d: %v %v", i, v, r)
		}
		if h.l.Lend(fp) {
			t.Fatalf("key %d lent while requested", i)
		}
		if v, r := h.l.Queue(h.now, 1, fp); v != OK {
			t.Fatalf("queue %d: %v %v", i, v, r)
		}
		held[fp] = k.URL
		lent := h.l.Lend(fp)
		if want := len(k.URL) > 0 && len(k.URL) <= offheap.MaxLen; lent != want {
			t.Fatalf("key %d (%d bytes): Lend = %v, want %v", i, len(k.URL), lent, want)
		}
		if h.l.Lend(fp) {
			t.Fatalf("key %d lent twice", i)
		}
	}
	if n := h.l.Lent(); n != 3 {
		t.Fatalf("%d URLs lent, want 3", n)
	}
	h.checked()
	for i, k := range keys {
		if rec, ok := h.l.Lookup(h.now, k.Fingerprint()); !ok || rec.Key != k {
			t.Fatalf("key %d: Lookup = %+v, %v; want %+v", i, rec.Key, ok, k)
		}
	}
	h.l.Reclaim(keys[1].Fingerprint(), keys[1].URL)
	h.l.Reclaim(keys[2].Fingerprint(), "short") // not its URL: nothing
	delete(held, keys[1].Fingerprint())
	h.checked()
	if n := h.l.Lent(); n != 2 {
		t.Fatalf("%d URLs lent after a reclaim, want 2", n)
	}
	for i, k := range keys {
		if rec, ok := h.l.Lookup(h.now, k.Fingerprint()); !ok || rec.Key != k {
			t.Fatalf("key %d after a reclaim: Lookup = %+v, %v; want %+v", i, rec.Key, ok, k)
		}
		h.l.Done(h.now, k, k.Fingerprint(), DoneOK)
	}
	h.checked()
	if err := h.l.keys.urls.Check(nil); err != nil { // every slot free again
		t.Fatalf("with no live key: %v", err)
	}
}
