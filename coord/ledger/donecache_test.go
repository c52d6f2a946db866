package ledger

import (
	"slices"
	"strings"
	"testing"
	"time"

	"drover/coord/id"
)

// cacheStore stands in for the store behind a bounded ledger: the writes of
// each batch, applied when the test makes them durable.
type cacheStore struct {
	l       *Ledger
	recs    map[id.Fingerprint]Write
	pending [][]Write // batches taken, not durable yet, from durable+1 on
	durable uint64
}

func newCacheStore(l *Ledger) *cacheStore {
	return &cacheStore{l: l, recs: make(map[id.Fingerprint]Write)}
}

// take closes the ledger's current write batch.
func (s *cacheStore) take() {
	s.pending = append(s.pending, s.l.TakeWrites(nil))
}

// sync makes the first n pending batches durable and tells the ledger.
func (s *cacheStore) sync(n int) {
	for _, b := range s.pending[:n] {
		for _, w := range b {
			if w.Op == Delete {
				delete(s.recs, w.FP)
			} else {
				s.recs[w.FP] = w
			}
		}
	}
	s.pending = s.pending[n:]
	s.durable += uint64(n)
	s.l.WritesDurable(s.durable)
}

// answer is the reactor's lookup: a key the ledger has no record of is
// looked up in the store, and a done or failed record is given back.
func (s *cacheStore) answer(fp id.Fingerprint) {
	if s.l.Known(fp) {
		return
	}
	if w, ok := s.recs[fp]; ok && w.Op == PutDone {
		s.l.KnownDone(fp, w.At, w.Outcome)
	}
}

func TestDoneCacheConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // "" for valid
	}{
		{"unbounded", Config{}, ""},
		{"bounded with persist", Config{DoneCache: 10, Persist: true}, ""},
		{"negative", Config{DoneCache: -1, Persist: true}, "DoneCache is -1"},
		{"bounded without persist", Config{DoneCache: 10}, "without Persist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("New(%+v): %v, want no error", tt.cfg, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("New(%+v): %v, want an error saying %q", tt.cfg, err, tt.want)
			}
		})
	}
}

// TestDoneCacheEvictsOnlyDurable: a bounded set holds every record whose
// write is not durable, whatever its bound, and evicts the oldest once
// their batches are durable.
func TestDoneCacheEvictsOnlyDurable(t *testing.T) {
	labels := []string{"a", "b", "c", "d", "e"}
	tests := []struct {
		name      string
		durable   int      // batches made durable (of 2)
		wantKnown []string // keys still in memory
		stored    int
	}{
		{"nothing durable", 0, labels, 0},
		{"first batch durable", 1, []string{"c", "d", "e"}, 2},
		{"both durable", 2, []string{"d", "e"}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Config{Persist: true, DoneCache: 2})
			st := newCacheStore(h.l)
			for i, lb := range labels {
				h.l.Done(h.now, key(lb), fpOf(lb), DoneOK)
				h.checked()
				if i == 1 { // a, b in batch 1; c, d, e in batch 2
					st.take()
				}
			}
			st.take()
			st.sync(tt.durable)
			h.checked()
			var known []string
			for _, lb := range labels {
				if h.l.Known(fpOf(lb)) {
					known = append(known, lb)
				}
			}
			if !slices.Equal(known, tt.wantKnown) {
				t.Fatalf("keys in memory %v, want %v", known, tt.wantKnown)
			}
			if c := h.l.Counts(); c.Done != len(labels) {
				t.Fatalf("Counts().Done = %d, want %d (in memory and evicted)", c.Done, len(labels))
			}
			if dc, _ := h.l.DoneCache(); dc.Stored != tt.stored || dc.InMemory != len(tt.wantKnown) {
				t.Fatalf("DoneCache() = %+v, want %d stored and %d in memory", dc, tt.stored, len(tt.wantKnown))
			}
		})
	}
}

// TestDoneCacheKnownDone: an evicted key is answered from the store through
// KnownDone exactly as if it had stayed, TTLs included; without the lookup
// the ledger would not know it.
func TestDoneCacheKnownDone(t *testing.T) {
	const ttl = 10 * time.Second
	tests := []struct {
		name    string
		outcome Outcome
		after   time.Duration // from the done time to the request
		lookup  bool          // the reactor looks the key up first
		want    Verdict
		reason  Reason
		deleted bool // the request deletes the expired record
	}{
		{"done, answered from the store", DoneOK, time.Second, true, No, ReasonDone, false},
		{"failed, answered from the store", DoneFailed, time.Second, true, No, ReasonFailed, false},
		{"done, past its TTL", DoneOK, ttl + time.Second, true, OK, ReasonNone, true},
		{"failed, past its TTL", DoneFailed, 2*ttl + time.Second, true, OK, ReasonNone, true},
		{"failed, within its longer TTL", DoneFailed, ttl + time.Second, true, No, ReasonFailed, false},
		{"no lookup: the ledger does not know it", DoneOK, time.Second, false, OK, ReasonNone, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Config{Persist: true, DoneCache: 1, DoneTTL: ttl, FailedTTL: 2 * ttl})
			st := newCacheStore(h.l)
			h.l.Done(h.now, key("x"), fpOf("x"), tt.outcome)
			h.l.Done(h.now, key("y"), fpOf("y"), DoneOK) // pushes x out
			st.take()
			st.sync(1)
			h.checked()
			if h.l.Known(fpOf("x")) {
				t.Fatal("x is still in memory after its write was durable and the bound passed")
			}
			h.advance(tt.after)
			if tt.lookup {
				st.answer(fpOf("x"))
				h.checked()
				if !h.l.Known(fpOf("x")) {
					t.Fatal("KnownDone did not take x back")
				}
				if h.l.KnownDone(fpOf("x"), h.now, DoneOK) {
					t.Fatal("a second KnownDone of a key in memory was taken")
				}
			}
			h.l.TakeEvents(nil)
			v, r := h.request(1, 1, "x")
			if v != tt.want || r != tt.reason {
				t.Fatalf("request x: %v %q, want %v %q", v, r, tt.want, tt.reason)
			}
			ws := h.l.TakeWrites(nil)
			gotDelete := slices.ContainsFunc(ws, func(w Write) bool { return w.Op == Delete && w.FP == fpOf("x") })
			if gotDelete != tt.deleted {
				t.Fatalf("writes %+v: delete of x %v, want %v", ws, gotDelete, tt.deleted)
			}
		})
	}
}

// TestDoneCacheNewerWriteNotDurable: a key done, requeued and done again in
// the same second leaves two FIFO entries with the same stamp; the older,
// durable one must not evict the record whose newest write is still in
// flight (the store would say queued, and the key would be done twice).
func TestDoneCacheNewerWriteNotDurable(t *testing.T) {
	h := newHarness(t, Config{Persist: true, DoneCache: 1})
	st := newCacheStore(h.l)
	h.l.Done(h.now, key("k"), fpOf("k"), DoneOK)
	st.take() // batch 1: k done
	st.sync(1)
	h.l.Requeue(h.now, key("k"), fpOf("k"))
	st.take() // batch 2: k queued
	h.l.Done(h.now, key("k"), fpOf("k"), DoneOK)
	h.l.Done(h.now, key("j"), fpOf("j"), DoneOK)
	st.take() // batch 3: k and j done
	h.checked()
	st.sync(1) // batch 2 durable: the store says k is queued
	h.checked()
	if !h.l.Known(fpOf("k")) {
		t.Fatal("k evicted while its newest write (done) was not durable")
	}
	if v, r := h.request(2, 1, "k"); v != No || r != ReasonDone {
		t.Fatalf("request k: %v %q, want no done", v, r)
	}
	st.sync(1)
	h.checked()
	if h.l.Known(fpOf("k")) || !h.l.Known(fpOf("j")) {
		t.Fatal("after every batch is durable, want k evicted and j kept")
	}
	st.answer(fpOf("k"))
	if v, r := h.request(2, 2, "k"); v != No || r != ReasonDone {
		t.Fatalf("request k answered from the store: %v %q, want no done", v, r)
	}
}

func TestDoneCacheRestoreStored(t *testing.T) {
	h := newHarness(t, Config{Persist: true, DoneCache: 4})
	if err := h.l.RestoreStored(7); err != nil {
		t.Fatal(err)
	}
	if err := h.l.RestoreStored(-1); err == nil {
		t.Fatal("RestoreStored(-1): no error")
	}
	h.l.KnownDone(fpOf("a"), h.now, DoneOK)
	if c := h.l.Counts(); c.Done != 7 {
		t.Fatalf("Counts().Done = %d, want 7 (one record back in memory, six in the store)", c.Done)
	}
	u := newHarness(t, Config{})
	if err := u.l.RestoreStored(1); err == nil {
		t.Fatal("an unbounded ledger accepted records left in the store")
	}
}

// Keys the store expires stop counting as done when they were counted as
// stored only; keys held in memory are counted by the ledger's own expiry,
// and the count never goes below zero.
func TestDoneCacheStoredExpired(t *testing.T) {
	h := newHarness(t, Config{Persist: true, DoneCache: 4})
	if err := h.l.RestoreStored(3); err != nil {
		t.Fatal(err)
	}
	h.l.KnownDone(fpOf("a"), h.now, DoneOK) // back in memory: 1 in memory, 2 stored
	if c := h.l.Counts(); c.Done != 3 {
		t.Fatalf("Counts().Done = %d before the sweep, want 3", c.Done)
	}
	if n := h.l.StoredExpired([]id.Fingerprint{fpOf("a"), fpOf("b")}); n != 1 {
		t.Fatalf("StoredExpired(a in memory, b stored) uncounted %d, want 1 (b)", n)
	}
	if c := h.l.Counts(); c.Done != 2 {
		t.Fatalf("Counts().Done = %d after the sweep, want 2", c.Done)
	}
	if n := h.l.StoredExpired([]id.Fingerprint{fpOf("c"), fpOf("d"), fpOf("e")}); n != 1 {
		t.Fatalf("StoredExpired of three with one left stored uncounted %d, want 1", n)
	}
	if n := newHarness(t, Config{}).l.StoredExpired([]id.Fingerprint{fpOf("a")}); n != 0 {
		t.Fatalf("an unbounded ledger uncounted %d", n)
	}
}
