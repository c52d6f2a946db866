package broker

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	"drover/admin"
	"drover/coord/id"
)

// TestPageOutAndIn pages the youngest queued jobs of a broker out (a
// store, here a map, keeps their records), checks that the totals still
// count them as queued and that nothing dispatches them, then pages them
// back in, oldest first, and checks that every job is dispatched once, in
// submission order, with the invariants holding throughout.
func TestPageOutAndIn(t *testing.T) {
	b, err := New(Config{Jitter: -1})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3*chunkSize + 100
	for i := range n {
		host := "h" + strconv.Itoa(i%3)
		b.Submit(epoch, Spec{Key: id.Key{URL: "http://" + host + "/" + strconv.Itoa(i)}, Host: host})
	}
	// A sort index built before paging must follow it.
	if p := b.Jobs(admin.Query{Sort: "url", Limit: 5}); p.Total != n {
		t.Fatalf("jobs by url: total %d, want %d", p.Total, n)
	}
	const keep = 500
	out := b.YoungestQueued(n-keep, nil)
	if len(out) != n-keep || out[0] != n || out[len(out)-1] != keep+1 {
		t.Fatalf("youngest queued: %d ids from %d to %d, want %d from %d to %d", len(out), out[0], out[len(out)-1], n-keep, n, keep+1)
	}
	stored := map[JobID]JobRecord{}
	for _, j := range out {
		r, ok := b.Record(j)
		if !ok {
			t.Fatalf("job %d has no record", j)
		}
		stored[j] = r
		if !b.PageOut(j) {
			t.Fatalf("job %d not paged out", j)
		}
	}
	if b.PageOut(out[0]) {
		t.Fatal("a paged-out job paged out again")
	}
	if err := checkInvariants(b); err != nil {
		t.Fatal(err)
	}
	var tt admin.Totals
	b.Totals(&tt)
	if tt.Queued != n || b.PagedOut() != n-keep || b.Submitted() != n {
		t.Fatalf("queued %d, paged out %d, submitted %d; want %d, %d, %d", tt.Queued, b.PagedOut(), b.Submitted(), n, n-keep, n)
	}
	if b.jobs.chunks[2] != nil {
		t.Fatal("the chunk of paged-out jobs was not released")
	}
	if _, ok := b.Job(JobID(n)); ok {
		t.Fatal("a paged-out job is still listed")
	}
	if err := b.Register(epoch, 1, WorkerInfo{ID: "w", Slots: 1}, nil); err != nil {
		t.Fatal(err)
	}
	next := JobID(1)
	for next <= n {
		as := b.Dispatch(epoch, nil)
		if len(as) == 0 {
			// The resident queue ran dry: page the oldest stored jobs in.
			if b.Count(Queued) != 0 {
				t.Fatalf("nothing dispatched with %d queued", b.Count(Queued))
			}
			for j := next; j < next+200 && j <= n; j++ {
				r := stored[j]
				if err := b.PageIn(epoch, &r); err != nil {
					t.Fatal(err)
				}
				delete(stored, j)
			}
			if err := checkInvariants(b); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if as[0].Job != next {
			t.Fatalf("dispatched job %d, want %d (FIFO)", as[0].Job, next)
		}
		if err := result(b, epoch, 1, as[0].Job, Outcome{Kind: OK}); err != nil {
			t.Fatal(err)
		}
		next++
	}
	b.Totals(&tt)
	if tt.Done != n || tt.Queued != 0 || b.PagedOut() != 0 {
		t.Fatalf("done %d, queued %d, paged out %d; want %d, 0, 0", tt.Done, tt.Queued, b.PagedOut(), n)
	}
	if err := checkInvariants(b); err != nil {
		t.Fatal(err)
	}
	if p := b.Jobs(admin.Query{Filter: "host=h1"}); p.Total != (n+1)/3 {
		t.Fatalf("jobs of host h1: %d, want %d", p.Total, (n+1)/3)
	}
}

func TestPageInRefuses(t *testing.T) {
	b, err := New(Config{Jitter: -1})
	if err != nil {
		t.Fatal(err)
	}
	b.Submit(epoch, Spec{Key: id.Key{URL: "http://h/1"}, Host: "h"})
	r, _ := b.Record(1)
	if err := b.PageIn(epoch, &r); err == nil {
		t.Fatal("a job in memory paged in")
	}
	b.PageOut(1)
	bad := r
	bad.ID = 2
	if err := b.PageIn(epoch, &bad); err == nil {
		t.Fatal("an ID never allocated paged in")
	}
	bad = r
	bad.State = Done
	if err := b.PageIn(epoch, &bad); err == nil {
		t.Fatal("a done record paged in")
	}
	if err := b.PageIn(epoch, &r); err != nil {
		t.Fatal(err)
	}
	if err := checkInvariants(b); err != nil {
		t.Fatal(err)
	}
}

// TestHostListCompacts: a host whose jobs mostly left memory (paged out,
// or done and forgotten) has its job list rebuilt without their positions;
// its jobs, their order and the host's counts stay right, and the jobs
// paged back in are listed again.
func TestHostListCompacts(t *testing.T) {
	const n = 3000
	b, err := New(Config{DoneRetention: 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		b.Submit(epoch, Spec{Key: id.Key{URL: fmt.Sprintf("http://one.test/%d", i)}, Host: "one.test"})
	}
	h := b.hosts["one.test"]
	var recs []JobRecord
	for jid := JobID(n); jid > 500; jid-- {
		r, _ := b.Record(jid)
		recs = append(recs, r)
		if !b.PageOut(jid) {
			t.Fatalf("job %d not paged out", jid)
		}
	}
	if h.ids.len() >= n/2 {
		t.Fatalf("host list of %d positions for 500 jobs in memory: want it compacted", h.ids.len())
	}
	if err := checkInvariants(b); err != nil {
		t.Fatal(err)
	}
	if p := b.Jobs(admin.Query{Filter: "host=one.test", Offset: 490, Limit: 20}); p.Total != 500 || len(p.Jobs) != 10 || p.Jobs[9].JobID != 500 {
		t.Fatalf("host jobs after the page-out: total %d, %d rows; want 500 and jobs 491..500", p.Total, len(p.Jobs))
	}
	slices.Reverse(recs)
	for i := range recs {
		if err := b.PageIn(epoch, &recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := checkInvariants(b); err != nil {
		t.Fatal(err)
	}
	p := b.Jobs(admin.Query{Filter: "host=one.test", Limit: n})
	if p.Total != n {
		t.Fatalf("host jobs after the page-in: total %d, want %d", p.Total, n)
	}
	for i, r := range p.Jobs {
		if r.JobID != uint64(i+1) {
			t.Fatalf("host jobs after the page-in: row %d is job %d, want %d", i, r.JobID, i+1)
		}
	}
}
