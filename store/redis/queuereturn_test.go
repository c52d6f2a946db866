package redis

import (
	"slices"
	"testing"
	"time"

	"drover/admin"
	"drover/coord/broker"
	"drover/coord/ledger"
)

// Jobs coordinator b claimed and hands back (Return: it has no worker
// left) go back to the queue at once, their leases ended and their
// polite slots freed, and coordinator a claims them; of a crawl's jobs,
// those that ran on b keep their charges (a refund after a's claim gives
// back only the pages of those that never ran).
func TestReturnHandsClaimedJobsBack(t *testing.T) {
	rdb := client(t)
	ls := peers(t, rdb, 2, ledger.Config{})
	a, b := ls[0].Crawls(), ls[1].Crawls()
	// One polite slot per host: a job b holds blocks its host for a
	// until b hands it back.
	pol := politeAll(broker.Limits{PerHost: 1})
	a.HoldPoliteness(pol)
	b.HoldPoliteness(pol)
	if err := a.SaveCrawl(admin.Crawl{Name: "news", Scope: "host", MaxPages: 10, State: admin.CrawlRunning}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	specs := []broker.Spec{crawlSpec("news", 0), crawlSpec("news", 1), crawlSpec("news", 2)} // hosts h0, h1, h2
	if _, err := a.PushBatch(now, specs); err != nil {
		t.Fatal(err)
	}
	got := claimSome(t, b.Queue, 3)
	for len(got) < 3 {
		got = append(got, claimSome(t, b.Queue, 3-len(got))...)
	}
	if r, err := b.Charge(now, got); err != nil || slices.ContainsFunc(r, func(n int) bool { return n != 0 }) {
		t.Fatalf("charge: %v, %v; want all charged", r, err)
	}
	if more, _ := a.Claim(now, 3); len(more) != 0 {
		t.Fatalf("a claimed %d jobs while b holds every host's one slot", len(more))
	}
	back := make([]broker.HandedBack, len(got))
	for i, sp := range got {
		back[i] = broker.HandedBack{Key: sp.Key, FP: sp.FP, Ran: i == 0}
	}
	b.Return(now, back)
	if err := ls[1].Err(); err != nil {
		t.Fatal(err)
	}
	if b.HandedBack != 3 || len(b.held) != 0 {
		t.Fatalf("b handed back %d jobs and holds %d; want 3 and none", b.HandedBack, len(b.held))
	}
	if _, leased := queueStats(t, a.Queue); leased != 0 {
		t.Fatalf("%d jobs still leased after the hand-back; want none", leased)
	}
	again := claimSome(t, a.Queue, 3)
	for len(again) < 3 {
		again = append(again, claimSome(t, a.Queue, 3-len(again))...)
	}
	kept, err := rdb.SMembers(t.Context(), ls[0].crawlKey("news", "kept")).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 1 || kept[0] != rawFP(got[0].FP) {
		t.Fatalf("kept charges %q; want only the job that ran on b's", kept)
	}
	// a cancels them before a dispatch: only the two that never ran
	// give their pages back.
	a.Refund(now, items(again))
	cs, err := a.ReadCrawls()
	if err != nil || len(cs) != 1 || cs[0].Pages != 1 {
		t.Fatalf("crawls %+v, %v; want 1 page spent (the job that ran on b)", cs, err)
	}
}

// A job handed back as unroutable (none of b's workers has its headers)
// leaves its host to the other coordinators' claims for AvoidUnroutable
// on b's clock: b claims nothing there meanwhile, a claims the job, and
// after that time b claims the host's jobs again.
func TestReturnUnroutableLeavesHostToOthers(t *testing.T) {
	rdb := client(t)
	ls := peers(t, rdb, 2, ledger.Config{})
	a, b := ls[0].Jobs(), ls[1].Jobs()
	now := time.Now()
	gpu := jobSpec(3)
	gpu.Headers = map[string]string{"hw": "gpu"}
	if _, err := a.Push(now, gpu); err != nil {
		t.Fatal(err)
	}
	got := claimSome(t, b, 1)
	if len(got) != 1 || got[0].Headers["hw"] != "gpu" {
		t.Fatalf("b claimed %+v; want the gpu job", got)
	}
	b.Return(now, []broker.HandedBack{{Key: got[0].Key, FP: got[0].FP, Unroutable: true}})
	if _, err := a.Push(now, jobSpec(13)); err != nil { // the same host, h3
		t.Fatal(err)
	}
	if again, err := b.Claim(now.Add(time.Second), 10); err != nil || len(again) != 0 {
		t.Fatalf("b claimed %d jobs (%v) within %v of handing back the host's unroutable job; want none", len(again), err, AvoidUnroutable)
	}
	onA, err := a.Claim(now, 10)
	if err != nil || len(onA) != 2 || onA[0].Headers["hw"] != "gpu" {
		t.Fatalf("a claimed %+v, %v; want the gpu job back at the front, with its headers, and the other", onA, err)
	}
	if _, err := a.Push(now, jobSpec(23)); err != nil {
		t.Fatal(err)
	}
	if later, err := b.Claim(now.Add(AvoidUnroutable), 10); err != nil || len(later) != 1 {
		t.Fatalf("b claimed %d jobs (%v) %v after the hand-back; want the host's new one", len(later), err, AvoidUnroutable)
	}
}
