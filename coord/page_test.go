package coord

import (
	"testing"

	"drover/coord/broker"
	"drover/coord/id"
	"drover/coord/ledger"
)

// TestPageOutAndIn: jobs paged out leave the broker and the ledger but stay
// counted as queued; a key paged out is answered as queued once the edge
// gives it back (KnownQueued); paged back in, the jobs are dispatched.
func TestPageOutAndIn(t *testing.T) {
	st := newMemStore()
	c := newCoord(t, persistCfg())
	must(t)(c.Hello(t0, 1, Hello{Role: RoleProducer, ID: "p"}))
	urls := []string{"http://a.test/1", "http://a.test/2", "http://a.test/3", "http://a.test/4"}
	must(t)(c.Submit(t0, 1, 1, specs(urls...), nil))
	st.apply(t, c.Ready(t0).Writes)

	out := c.YoungestQueued(2, nil)
	if len(out) != 2 || out[0] != 4 || out[1] != 3 {
		t.Fatalf("youngest queued %v, want [4 3]", out)
	}
	recs := make([]JobRecord, 0, 2)
	for _, j := range []broker.JobID{3, 4} {
		r, ok := c.brk.Record(j)
		if !ok {
			t.Fatalf("job %d has no record", j)
		}
		recs = append(recs, r)
	}
	if n := c.PageOut(t0, out); n != 2 {
		t.Fatalf("paged out %d, want 2", n)
	}
	if jobs, keys := c.Paged(); jobs != 2 || keys != 2 {
		t.Fatalf("paged %d jobs, %d keys; want 2, 2", jobs, keys)
	}
	if tot := c.Totals(t0); tot.Queued != 4 || tot.KeysQueued != 4 {
		t.Fatalf("totals: %d queued jobs, %d keys; want 4 of each", tot.Queued, tot.KeysQueued)
	}
	// A REQUEST for a paged-out key: Unknown names it, the edge gives it
	// back from the store, and the answer is no "queued".
	k := specs(urls[3])[0].Key
	unknown := c.Unknown([]id.Key{k}, nil)
	if len(unknown) != 1 {
		t.Fatalf("Unknown = %v, want the paged-out key", unknown)
	}
	w := st.keys[unknown[0]]
	if n := c.KnownQueued([]QueuedKey{{FP: unknown[0], Key: w.Key, At: w.At}}); n != 1 {
		t.Fatalf("KnownQueued took %d, want 1", n)
	}
	vs, err := c.Request(t0, 1, 2, []id.Key{k}, nil)
	if err != nil || vs[0].Verdict != ledger.No || vs[0].Reason != ledger.ReasonQueued {
		t.Fatalf("request of a paged-out key: %+v, %v; want no queued", vs, err)
	}
	if _, keys := c.Paged(); keys != 1 {
		t.Fatalf("paged keys %d after one came back, want 1", keys)
	}
	// Paged back in, in id order, the jobs run.
	if n, err := c.PageIn(t0, recs); err != nil || n != 2 {
		t.Fatalf("paged in %d, %v; want 2", n, err)
	}
	if n, err := c.PageIn(t0, recs); err != nil || n != 0 {
		t.Fatalf("paged in again %d, %v; want 0 (in memory)", n, err)
	}
	if jobs, keys := c.Paged(); jobs != 0 || keys != 0 {
		t.Fatalf("paged %d jobs, %d keys after the page-in; want none", jobs, keys)
	}
	if n := c.mem.(*ledger.Ledger).Lent(); n != 4 {
		t.Fatalf("%d queued keys lent their URLs to their jobs after the page-in, want 4", n)
	}
	for _, r := range recs {
		if lr, ok := c.mem.(*ledger.Ledger).Lookup(t0, r.FP); !ok || lr.Key != r.Key {
			t.Fatalf("key of job %d after the page-in: %+v, %v; want %+v", r.ID, lr.Key, ok, r.Key)
		}
	}
	must(t)(c.Hello(t0, 2, Hello{Role: RoleWorker, ID: "w", Slots: 4}))
	var got []broker.JobID
	for _, a := range c.Ready(t0).Jobs {
		got = append(got, a.Job)
	}
	if len(got) != 4 {
		t.Fatalf("dispatched %v, want all 4 jobs", got)
	}
	if tot := c.Totals(t0); tot.Queued != 0 || tot.Dispatched != 4 || tot.KeysQueued != 4 {
		t.Fatalf("totals %+v: want 4 dispatched, 4 keys queued", tot)
	}
}
