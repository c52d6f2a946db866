package ledger

import (
	"maps"
	"strings"
	"testing"
	"time"

	"drover/coord/id"
)

// testJobs holds jobs for TestLendAndReclaim: job j has key keys[j-1].
type testJobs struct {
	keys []id.Key
	at   []time.Time
	byFP map[id.Fingerprint]uint32
	lent map[uint32]bool // Lent and not Returned
}

func (t *testJobs) JobOf(fp id.Fingerprint) (uint32, bool) { j, ok := t.byFP[fp]; return j, ok }
func (t *testJobs) JobFP(j uint32) id.Fingerprint          { return t.keys[j-1].Fingerprint() }
func (t *testJobs) JobKey(j uint32) (id.Key, time.Time)    { return t.keys[j-1], t.at[j-1] }
func (t *testJobs) Lent(j uint32)                          { t.lent[j] = true }
func (t *testJobs) Returned(j uint32)                      { delete(t.lent, j) }

// TestLendAndReclaim lends queued keys to their jobs, reads the keys back
// through them (Lookup, Queued, the answers), reclaims some as if their
// jobs were forgotten, marks the others done, and checks that every slab
// slot comes back and a key reads the same throughout.
func TestLendAndReclaim(t *testing.T) {
	h := newHarness(t, Config{})
	jobs := &testJobs{byFP: map[id.Fingerprint]uint32{}, lent: map[uint32]bool{}}
	h.l.SetJobs(jobs)
	var keys []id.Key
	for i, n := range []int{0, 9, 40, 256, 300} {
		keys = append(keys, id.Key{Crawler: "c", Processor: "p", URL: strings.Repeat(string(rune('a'+i)), n)})
	}
	for i, k := range keys {
		fp := k.Fingerprint()
		if v, r := h.l.Request(h.now, 1, uint64(i), k, fp); v != OK {
			t.Fatalf("request %d: %v %v", i, v, r)
		}
		jobs.keys, jobs.at = append(jobs.keys, k), append(jobs.at, h.now)
		jobs.byFP[fp] = uint32(len(jobs.keys))
		if h.l.Lend(fp) {
			t.Fatalf("key %d lent while requested", i)
		}
		if v, r := h.l.Queue(h.now, 1, fp); v != OK {
			t.Fatalf("queue %d: %v %v", i, v, r)
		}
		if i == 4 {
			jobs.at[i] = h.now.Add(time.Second) // not the job of this queued key
		}
		if lent := h.l.Lend(fp); lent != (i != 4) {
			t.Fatalf("key %d: Lend = %v, want %v", i, lent, i != 4)
		}
		if h.l.Lend(fp) {
			t.Fatalf("key %d lent twice", i)
		}
		h.now = h.now.Add(time.Millisecond)
	}
	if n := h.l.Lent(); n != 4 {
		t.Fatalf("%d keys lent, want 4", n)
	}
	if !maps.Equal(jobs.lent, map[uint32]bool{1: true, 2: true, 3: true, 4: true}) {
		t.Fatalf("the holder was told jobs %v were lent keys, want 1 to 4", jobs.lent)
	}
	for i, k := range keys {
		if j, ok := h.l.LentJob(k.Fingerprint()); ok != (i != 4) || ok && j != uint32(i+1) {
			t.Fatalf("key %d: LentJob = %d, %v", i, j, ok)
		}
	}
	h.checked()
	check := func(when string) {
		t.Helper()
		for i, k := range keys {
			fp := k.Fingerprint()
			if rec, ok := h.l.Lookup(h.now, fp); !ok || rec.Key != k || rec.State != Queued {
				t.Fatalf("%s: key %d: Lookup = %+v, %v; want queued %+v", when, i, rec, ok, k)
			}
			if v, r := h.l.Request(h.now, 2, 1, k, fp); v != No || r != ReasonQueued {
				t.Fatalf("%s: key %d: request %v %v, want no queued", when, i, v, r)
			}
			if v, r := h.l.Queue(h.now, 1, fp); v != Error || r != ReasonWrongState {
				t.Fatalf("%s: key %d: queue %v %v, want wrong-state", when, i, v, r)
			}
		}
		if c := h.l.Counts(); c.Queued != len(keys) {
			t.Fatalf("%s: %d queued, want %d", when, c.Queued, len(keys))
		}
		q := h.l.Queued(0, 100)
		if len(q) != len(keys) {
			t.Fatalf("%s: Queued lists %d keys, want %d", when, len(q), len(keys))
		}
		for i := 1; i < len(q); i++ {
			if q[i].Since.Before(q[i-1].Since) {
				t.Fatalf("%s: Queued out of order at %d: %v after %v", when, i, q[i].Since, q[i-1].Since)
			}
		}
		if w := h.l.Queued(3, 1); len(w) != 1 || w[0].FP != q[3].FP {
			t.Fatalf("%s: Queued(3, 1) = %+v, want %v", when, w, q[3].FP)
		}
	}
	check("lent")
	h.l.Reclaim(keys[1].Fingerprint(), 1) // not its job: nothing
	h.l.Reclaim(keys[1].Fingerprint(), 2)
	h.l.Reclaim(keys[2].Fingerprint(), 3)
	h.checked()
	if n := h.l.Lent(); n != 2 {
		t.Fatalf("%d keys lent after two reclaims, want 2", n)
	}
	check("reclaimed")
	for _, k := range keys {
		h.l.Done(h.now, k, k.Fingerprint(), DoneOK)
	}
	h.checked()
	if n := h.l.Lent(); n != 0 {
		t.Fatalf("%d keys lent after all were done, want 0", n)
	}
	// Jobs 1 and 4 were returned their keys as they became done; 2 and 3
	// were reclaimed (their holder was forgetting them: not told).
	if !maps.Equal(jobs.lent, map[uint32]bool{2: true, 3: true}) {
		t.Fatalf("jobs still holding keys as the holder was told: %v, want 2 and 3", jobs.lent)
	}
	if _, ok := h.l.LentJob(keys[0].Fingerprint()); ok {
		t.Fatal("a done key is still lent")
	}
	if err := h.l.keys.urls.Check(nil); err != nil { // every slot free again
		t.Fatalf("with no live key: %v", err)
	}
}
