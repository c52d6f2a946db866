package coord

import (
	"testing"
	"time"

	"drover/coord/broker"
	"drover/coord/ledger"
)

// TestQueuedKeysLendTheirURLs: a submitted job keeps the one copy of its
// queued key's URL (the ledger lends its own), from a SUBMIT of several
// jobs and of one (both go through submitOne on an in-memory ledger);
// the ledger still answers with the whole key; a job paged out or done
// takes its key's URL back to the ledger, or keeps it as its key goes.
func TestQueuedKeysLendTheirURLs(t *testing.T) {
	c := newCoord(t, Config{})
	led := c.mem.(*ledger.Ledger)
	must(t)(c.Hello(t0, 1, Hello{Role: RoleProducer, ID: "p"}))
	urls := []string{"http://a.test/1", "http://a.test/2", "http://a.test/3"}
	must(t)(c.Submit(t0, 1, 1, specs(urls...), nil))
	must(t)(c.Submit(t0, 1, 2, specs("http://a.test/4"), nil))
	c.Ready(t0)
	if n := led.Lent(); n != 4 {
		t.Fatalf("%d URLs lent after 4 submits, want 4", n)
	}
	lookup := func(u string) {
		t.Helper()
		k := specs(u)[0].Key
		r, ok := led.Lookup(t0, k.Fingerprint())
		if !ok || r.Key != k || r.State != ledger.Queued {
			t.Fatalf("Lookup(%s) = %+v, %v; want queued with its key", u, r, ok)
		}
	}
	for _, u := range append(urls, "http://a.test/4") {
		lookup(u)
	}
	// The broker's key index leaves a job holding its key to the ledger;
	// the coordinator still finds it (a duplicate names it).
	fp1 := specs(urls[0])[0].Key.Fingerprint()
	if _, ok := c.brk.JobOfKey(fp1); ok {
		t.Fatal("the broker's key index holds a job its key is lent to")
	}
	if j, ok := c.jobOfKey(fp1); !ok || j != 1 {
		t.Fatalf("jobOfKey = %d, %v; want job 1", j, ok)
	}
	if vs, err := c.Submit(t0, 1, 3, specs(urls[0]), nil); err != nil || vs[0].Status != Duplicate || vs[0].Job != 1 {
		t.Fatalf("resubmit: %+v, %v; want a duplicate of job 1", vs, err)
	}
	// A job forgotten while its key stays queued: the URL goes back.
	if !c.brk.PageOut(4) {
		t.Fatal("job 4 not paged out")
	}
	if n := led.Lent(); n != 3 {
		t.Fatalf("%d URLs lent after a job was forgotten, want 3", n)
	}
	lookup("http://a.test/4")
	// A job done: its key leaves the ledger, and the job is forgotten.
	must(t)(c.Hello(t0, 2, Hello{Role: RoleWorker, ID: "w", Slots: 1}))
	out := c.Ready(t0)
	if len(out.Jobs) != 1 {
		t.Fatalf("%d jobs dispatched, want 1", len(out.Jobs))
	}
	a := out.Jobs[0]
	must(t)(c.Results(t0, 2, []Result{{Run: broker.Run{Job: a.Job, Attempt: a.Attempt}, Outcome: broker.Outcome{Kind: broker.OK}}}, nil))
	c.Ready(t0)
	if n := led.Lent(); n != 2 {
		t.Fatalf("%d URLs lent after a job was done, want 2", n)
	}
	if u, ok := c.brk.URLOf(a.Spec.Key.Fingerprint()); !ok || u != a.Spec.Key.URL {
		t.Fatalf("the done job's URL: %q, %v; want %q kept with its record", u, ok, a.Spec.Key.URL)
	}
}

// TestRestoredQueuedKeysLent: after a restart, each restored queued key is
// lent to its restored job as after a submit (RestoreStats.KeysLent), the
// broker's key index leaves those jobs to the ledger, and the keys read
// and deduplicate as before.
func TestRestoredQueuedKeysLent(t *testing.T) {
	cfg := persistCfg()
	c := newCoord(t, cfg)
	s := newMemStore()
	must(t)(c.Hello(t0, 1, Hello{Role: RoleProducer, ID: "p"}))
	urls := []string{"http://a.test/1", "http://a.test/2", "http://b.test/3"}
	must(t)(c.Submit(t0, 1, 1, specs(urls...), nil))
	s.apply(t, c.Ready(t0).Writes)
	if n := c.mem.(*ledger.Ledger).Lent(); n != 3 {
		t.Fatalf("%d keys lent before the restart, want 3", n)
	}

	r, st := restoreFrom(t, persistCfg(), s, t0.Add(time.Second))
	led := r.mem.(*ledger.Ledger)
	if st.KeysLent != 3 || led.Lent() != 3 {
		t.Fatalf("restore lent %d keys (ledger: %d), want 3", st.KeysLent, led.Lent())
	}
	for i, u := range urls {
		k := specs(u)[0].Key
		fp := k.Fingerprint()
		if rec, ok := led.Lookup(t0, fp); !ok || rec.Key != k || rec.State != ledger.Queued || !rec.Since.Equal(t0) {
			t.Fatalf("Lookup(%s) = %+v, %v; want queued since %v with its key", u, rec, ok, t0)
		}
		if _, ok := r.brk.JobOfKey(fp); ok {
			t.Fatalf("%s: the broker's key index holds a job its key is lent to", u)
		}
		if j, ok := r.jobOfKey(fp); !ok || j != broker.JobID(i+1) {
			t.Fatalf("%s: jobOfKey = %d, %v; want job %d", u, j, ok, i+1)
		}
	}
	must(t)(r.Hello(t0, 1, Hello{Role: RoleProducer, ID: "p"}))
	vs, err := r.Submit(t0, 1, 2, specs(urls[1]), nil)
	if err != nil || vs[0].Status != Duplicate || vs[0].Job != 2 {
		t.Fatalf("resubmit after the restart: %+v, %v; want a duplicate of job 2", vs, err)
	}
	if tot := r.Totals(t0); tot.KeysQueued != 3 || tot.Queued != 3 {
		t.Fatalf("totals %d queued keys, %d queued jobs; want 3 and 3", tot.KeysQueued, tot.Queued)
	}
}

// TestRestoredKeyLentAtOnce: a queued key restored after its job (as the
// resident restore sends them) is lent as it comes, so its record's slot
// serves the next key: the ledger's record slab stays at one record.
func TestRestoredKeyLentAtOnce(t *testing.T) {
	cfg := persistCfg()
	c := newCoord(t, cfg)
	s := newMemStore()
	must(t)(c.Hello(t0, 1, Hello{Role: RoleProducer, ID: "p"}))
	must(t)(c.Submit(t0, 1, 1, specs("http://a.test/1", "http://a.test/2", "http://a.test/3", "http://a.test/4"), nil))
	s.apply(t, c.Ready(t0).Writes)
	r := newCoord(t, persistCfg())
	var keys []Record
	for _, rec := range s.records() {
		if rec.Kind == RecordKey {
			keys = append(keys, rec) // after the jobs
			continue
		}
		if err := r.RestoreRecord(rec); err != nil {
			t.Fatal(err)
		}
	}
	for _, rec := range keys {
		if err := r.RestoreRecord(rec); err != nil {
			t.Fatal(err)
		}
	}
	st, err := r.FinishRestore(t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	led := r.mem.(*ledger.Ledger)
	if st.KeysLent != 4 || led.Lent() != 4 {
		t.Fatalf("restore lent %d keys (ledger: %d), want 4", st.KeysLent, led.Lent())
	}
	if n := led.RecordSlots(); n > 1 {
		t.Fatalf("the ledger's record slab grew to %d slots for 4 keys lent as they came, want 1", n)
	}
}
