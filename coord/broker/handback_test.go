package broker

import (
	"slices"
	"strconv"
	"testing"

	"drover/admin"
	"drover/coord/id"
)

// TestHandBack: a worker holding two jobs is evicted with three more
// queued and one in a retry delay; with no worker left, HandBack takes
// the five queued jobs out (the two that ran marked so), leaves the one
// waiting its retry delay, keeps the invariants, emits job.requeued, and
// a late result for a handed-back job is stale.
func TestHandBack(t *testing.T) {
	b, err := New(Config{Jitter: -1, RetryJitter: -1})
	if err != nil {
		t.Fatal(err)
	}
	now := epoch
	if err := b.Register(now, 1, WorkerInfo{ID: "w", Slots: 3}, nil); err != nil {
		t.Fatal(err)
	}
	if !b.HasTaker() {
		t.Fatal("no taker with an idle worker")
	}
	for i := range 6 {
		k := id.Key{Crawler: "c", URL: "http://h" + strconv.Itoa(i%2) + "/" + strconv.Itoa(i)}
		b.Submit(now, Spec{Key: k, FP: k.Fingerprint(), Host: "h" + strconv.Itoa(i%2)})
	}
	// A sort index built before must follow.
	if p := b.Jobs(admin.Query{Sort: "url", Limit: 3}); p.Total != 6 {
		t.Fatalf("jobs by url: total %d, want 6", p.Total)
	}
	as := b.Dispatch(now, nil)
	if len(as) != 3 {
		t.Fatalf("dispatched %d, want 3", len(as))
	}
	// Job of the first assignment fails: it waits its retry delay.
	if err := result(b, now, 1, as[0].Job, Outcome{Kind: Internal, Error: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Evict(now, "w"); err != nil {
		t.Fatal(err)
	}
	if b.HasTaker() {
		t.Fatal("a taker after the only worker's eviction")
	}
	b.TakeEvents(nil)
	got := b.HandBack(now, "no worker", nil)
	if len(got) != 5 {
		t.Fatalf("handed back %d jobs, want 5 (the 2 evicted, the 3 never dispatched): %+v", len(got), got)
	}
	ran := 0
	for _, h := range got {
		if h.Ran {
			ran++
		}
		if h.Key.Crawler != "c" || h.FP != h.Key.Fingerprint() {
			t.Fatalf("handed back %+v: key or fingerprint lost", h)
		}
	}
	if ran != 2 {
		t.Fatalf("%d handed-back jobs marked as run, want 2", ran)
	}
	if err := checkInvariants(b); err != nil {
		t.Fatal(err)
	}
	var tt admin.Totals
	b.Totals(&tt)
	if tt.Queued != 0 || tt.Backoff != 1 || tt.Done+tt.Failed+tt.Dispatched != 0 || b.HandedBackJobs() != 5 {
		t.Fatalf("totals %+v, handed back %d; want 1 in back-off, 5 handed back, nothing else", tt, b.HandedBackJobs())
	}
	if n := len(b.TakeFinished(nil)); n != 0 {
		t.Fatalf("%d jobs finished by the hand-back, want none", n)
	}
	evs := b.TakeEvents(nil)
	if len(evs) != 5 || slices.ContainsFunc(evs, func(e admin.Event) bool { return e.Kind != admin.EventJobRequeued || e.Detail != "no worker" }) {
		t.Fatalf("events %+v, want 5 job.requeued", evs)
	}
	if again := b.HandBack(now, "no worker", nil); len(again) != 0 {
		t.Fatalf("a second hand-back took %d jobs, want none", len(again))
	}
	// A late result from the evicted worker's session names a job gone.
	st, _ := b.Result(now, 1, Run{Job: as[1].Job, Attempt: 1}, Outcome{Kind: OK})
	if st == Recorded {
		t.Fatal("a result for a handed-back job was recorded")
	}
	// The retried job is queued again after its delay: a later hand-back
	// takes it, and the broker is empty.
	at, ok := b.NextDeadline()
	if !ok {
		t.Fatal("no deadline for the retry")
	}
	b.Tick(at)
	if got := b.HandBack(at, "no worker", nil); len(got) != 1 || !got[0].Ran {
		t.Fatalf("after the retry delay handed back %+v, want the failed job, marked as run", got)
	}
	if err := checkInvariants(b); err != nil {
		t.Fatal(err)
	}
	if b.Count(Queued)+b.Count(Backoff) != 0 || b.HandedBackJobs() != 6 {
		t.Fatalf("queued %d, backoff %d, handed back %d; want 0, 0, 6", b.Count(Queued), b.Count(Backoff), b.HandedBackJobs())
	}
}

// TestHandBackKeepsPausedCrawls: the jobs of a paused crawl stay (they
// are parked, not waiting in a queue), and a draining worker is no
// taker.
func TestHandBackKeepsPausedCrawls(t *testing.T) {
	b, err := New(Config{Jitter: -1})
	if err != nil {
		t.Fatal(err)
	}
	now := epoch
	if err := b.Register(now, 1, WorkerInfo{ID: "w"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Drain(now, "w"); err != nil {
		t.Fatal(err)
	}
	if b.HasTaker() {
		t.Fatal("a taker with the only worker draining")
	}
	b.SetBudget("p", 10, 0)
	b.SetCrawlState(now, "p", CrawlPaused)
	b.Submit(now, Spec{Key: id.Key{Crawler: "p", URL: "http://h/p"}, Host: "h"})
	b.Submit(now, Spec{Key: id.Key{Crawler: "r", URL: "http://h/r"}, Host: "h"})
	got := b.HandBack(now, "x", nil)
	if len(got) != 1 || got[0].Key.Crawler != "r" {
		t.Fatalf("handed back %+v, want crawl r's job only", got)
	}
	if err := checkInvariants(b); err != nil {
		t.Fatal(err)
	}
}

// TestHandBackUnroutable: with a worker left that lacks the headers some
// jobs need, only those are handed back, marked Unroutable; Routable
// says which headers a live worker has.
func TestHandBackUnroutable(t *testing.T) {
	b, err := New(Config{Jitter: -1})
	if err != nil {
		t.Fatal(err)
	}
	now := epoch
	if err := b.Register(now, 1, WorkerInfo{ID: "plain"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Register(now, 2, WorkerInfo{ID: "gpu", Headers: map[string]string{"hw": "gpu"}}, nil); err != nil {
		t.Fatal(err)
	}
	gpu := map[string]string{"hw": "gpu"}
	if !b.Routable(gpu) || !b.Routable(nil) || b.Routable(map[string]string{"hw": "tpu"}) {
		t.Fatalf("routable gpu %v, none %v, tpu %v; want true, true, false", b.Routable(gpu), b.Routable(nil), b.Routable(map[string]string{"hw": "tpu"}))
	}
	for i := range 4 {
		k := id.Key{URL: "http://h/" + strconv.Itoa(i)}
		sp := Spec{Key: k, FP: k.Fingerprint(), Host: "h"}
		if i%2 == 1 {
			sp.Headers = gpu
		}
		b.Submit(now, sp)
	}
	if got := b.HandBackUnroutable(now, "x", nil); len(got) != 0 {
		t.Fatalf("handed back %+v while every job is routable", got)
	}
	if _, err := b.Evict(now, "gpu"); err != nil {
		t.Fatal(err)
	}
	if b.Routable(gpu) || !b.HasTaker() {
		t.Fatalf("after gpu's eviction: routable gpu %v, a taker %v; want false, true", b.Routable(gpu), b.HasTaker())
	}
	got := b.HandBackUnroutable(now, "x", nil)
	if len(got) != 2 || !got[0].Unroutable || !got[1].Unroutable || got[0].Key.URL != "http://h/1" || got[1].Key.URL != "http://h/3" {
		t.Fatalf("handed back %+v; want the 2 gpu jobs, marked unroutable", got)
	}
	var tt admin.Totals
	b.Totals(&tt)
	if tt.Queued != 2 || tt.Unroutable != 0 {
		t.Fatalf("queued %d, unroutable %d; want the 2 plain jobs queued, none unroutable", tt.Queued, tt.Unroutable)
	}
	if err := checkInvariants(b); err != nil {
		t.Fatal(err)
	}
}
