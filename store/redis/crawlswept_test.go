package redis

import (
	"testing"
	"time"

	"drover/admin"
	"drover/coord/broker"
	"drover/coord/ledger"
)

// A job whose coordinator died holding it (it may have fetched its page)
// keeps its charge: swept back to the queue, claimed by another
// coordinator (not charged again) and cancelled there before a dispatch,
// it gives no page back, so the crawl's budget still counts the page;
// likewise after a clean stop handed it back. A job cancelled before any
// dispatch, never swept, gives its page back.
func TestCrawlSweptJobKeepsItsCharge(t *testing.T) {
	rdb := client(t)
	ls := peers(t, rdb, 3, ledger.Config{})
	a, b, c := ls[0].Crawls(), ls[1].Crawls(), ls[2].Crawls()
	if err := a.SaveCrawl(admin.Crawl{Name: "news", Scope: "host", MaxPages: 10, State: admin.CrawlRunning}); err != nil {
		t.Fatal(err)
	}
	pages := func() int {
		t.Helper()
		cs, err := a.ReadCrawls()
		if err != nil || len(cs) != 1 {
			t.Fatalf("crawls %+v, %v", cs, err)
		}
		return cs[0].Pages
	}
	claimCharge := func(q *CrawlQueue) broker.Spec {
		t.Helper()
		got := claimSome(t, q.Queue, 1)
		if r, err := q.Charge(time.Now(), got); err != nil || r[0] != 0 {
			t.Fatalf("charge: %v, %v; want it charged", r, err)
		}
		return got[0]
	}
	if _, err := a.PushBatch(time.Now(), []broker.Spec{crawlSpec("news", 0)}); err != nil {
		t.Fatal(err)
	}
	// b claims the job (charged: 1 page) and dies holding it.
	claimCharge(b)
	if p := pages(); p != 1 {
		t.Fatalf("%d pages after b's claim; want 1", p)
	}
	ls[1].halt()
	if err := rdb.Del(t.Context(), ls[1].aliveKey(ls[1].coord)).Err(); err != nil { // its heartbeat expired
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ls[0].Swept+ls[2].Swept == 0; {
		if time.Now().After(deadline) {
			t.Fatal("b not swept")
		}
		ls[0].Maintain(time.Now())
		ls[2].Maintain(time.Now())
	}
	// a claims it back (not charged again), the crawl is cancelled
	// before a dispatches it: no page comes back.
	sp := claimCharge(a)
	a.Refund(time.Now(), []ledger.Item{{Key: sp.Key, FP: sp.FP}})
	if err := ls[0].Err(); err != nil {
		t.Fatal(err)
	}
	if p := pages(); p != 1 {
		t.Fatalf("%d pages after the swept job was cancelled on a; want 1 (b may have fetched it)", p)
	}
	// The same after a clean stop: c claims a job, hands it back.
	if _, err := a.PushBatch(time.Now(), []broker.Spec{crawlSpec("news", 1)}); err != nil {
		t.Fatal(err)
	}
	claimCharge(c)
	if n, err := c.ReturnLeased(); err != nil || n != 1 {
		t.Fatalf("c handed back %d jobs, %v; want 1", n, err)
	}
	sp = claimCharge(a)
	a.Refund(time.Now(), []ledger.Item{{Key: sp.Key, FP: sp.FP}})
	if p := pages(); p != 2 {
		t.Fatalf("%d pages after the job handed back was cancelled on a; want 2", p)
	}
	// Never swept nor handed back: cancelled before a dispatch, its
	// page comes back.
	if _, err := a.PushBatch(time.Now(), []broker.Spec{crawlSpec("news", 2)}); err != nil {
		t.Fatal(err)
	}
	sp = claimCharge(a)
	a.Refund(time.Now(), []ledger.Item{{Key: sp.Key, FP: sp.FP}})
	if p := pages(); p != 2 {
		t.Fatalf("%d pages after a job never dispatched anywhere was cancelled; want 2 (its page back)", p)
	}
}
