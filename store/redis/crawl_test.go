package redis

import (
	"fmt"
	"testing"
	"time"

	"drover/admin"
	"drover/coord/broker"
	"drover/coord/id"
	"drover/coord/ledger"
)

func crawlSpec(crawler string, i int) broker.Spec {
	k := id.Key{Crawler: crawler, Processor: "fetch", URL: fmt.Sprintf("http://h%d.example/%d", i%3, i)}
	return broker.Spec{Key: k, FP: k.Fingerprint(), Host: id.Host(k.URL)}
}

// A crawl's budget charged by two coordinators counts each job once: of
// 10 jobs claimed half on each, 4 may run (the budget) and 6 are refused;
// charging a job again (claimed again after its coordinator died) neither
// counts it again nor refuses it; a crawl without a budget refuses none.
// Both read the same figures back.
func TestCrawlBudgetCharged(t *testing.T) {
	rdb := client(t)
	ls := peers(t, rdb, 2, ledger.Config{})
	a, b := ls[0].Crawls(), ls[1].Crawls()
	if err := a.SaveCrawl(admin.Crawl{Name: "news", Scope: "host", MaxPages: 4, State: admin.CrawlRunning}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var specs []broker.Spec
	for i := range 10 {
		specs = append(specs, crawlSpec("news", i), crawlSpec("free", i))
	}
	if ids, err := a.PushBatch(now, specs); err != nil || len(ids) != 20 {
		t.Fatalf("push: %v, %v", ids, err)
	}
	ran, refused := 0, 0
	charge := func(q *CrawlQueue, sp []broker.Spec) []int {
		t.Helper()
		r, err := q.Charge(now, sp)
		if err != nil || len(r) != len(sp) {
			t.Fatalf("charge: %v, %v", r, err)
		}
		for i, n := range r {
			switch {
			case sp[i].Key.Crawler == "free" && n != 0:
				t.Fatalf("free job refused (%d): want no budget", n)
			case sp[i].Key.Crawler == "free":
			case n == 0:
				ran++
			case n == 4:
				refused++
			default:
				t.Fatalf("refused with budget %d; want 4", n)
			}
		}
		return r
	}
	first := charge(a, specs[:10])
	charge(b, specs[10:])
	if ran != 4 || refused != 6 {
		t.Fatalf("%d jobs may run, %d refused; want 4 and 6", ran, refused)
	}
	// Charged again: the runs stay runs and count once.
	ran, refused = 0, 0
	again := charge(b, specs[:10])
	for i := range first {
		if (first[i] == 0) != (again[i] == 0) {
			t.Fatalf("job %d: charged %d, then %d; want the same answer", i, first[i], again[i])
		}
	}
	a.Finish(now, []ledger.Item{{Key: specs[0].Key, FP: specs[0].FP}}, []ledger.Item{{Key: specs[2].Key, FP: specs[2].FP}})
	for _, q := range []*CrawlQueue{a, b} {
		cs, err := q.ReadCrawls()
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) != 1 || cs[0].Name != "news" || cs[0].Pages != 4 || cs[0].MaxPages != 4 || cs[0].Done != 1 || cs[0].Failed != 1 || cs[0].Queued != 8 {
			t.Fatalf("crawls %+v: want news alone, 4 of 4 pages, 1 done, 1 failed, 8 queued", cs)
		}
	}
}

// A crawl's jobs pushed are counted accepted in the round trip of their
// hosts' ready marks (two round trips a push, once their slots are
// registered), and a claim's jobs are counted out of the queue by the
// claim's own scripts (no round trip of their own); the cluster view's
// queued jobs stay exact.
func TestCrawlCountsShareRoundTrips(t *testing.T) {
	var rt roundTrips
	l, _ := hookedLedger(t, &rt)
	q := l.Crawls()
	now := time.Now()
	// takes a block of job ids and registers the three hosts' slots
	if _, err := q.PushBatch(now, []broker.Spec{crawlSpec("news", 0), crawlSpec("news", 1), crawlSpec("news", 2)}); err != nil {
		t.Fatal(err)
	}
	var specs []broker.Spec
	for i := 3; i < 12; i++ {
		specs = append(specs, crawlSpec("news", i))
	}
	before := rt.n.Load()
	if _, err := q.PushBatch(now, specs); err != nil {
		t.Fatal(err)
	}
	if trips := rt.n.Load() - before; trips != 2 {
		t.Fatalf("a push of 9 jobs of a crawl took %d round trips; want 2 (the entries, then the ready marks with the counts)", trips)
	}
	warm, err := q.Claim(now, 3) // the script's first run on each node
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Charge(now, warm); err != nil {
		t.Fatal(err)
	}
	before = rt.n.Load()
	got, err := q.Claim(now, 3)
	if err != nil || len(got) != 3 {
		t.Fatalf("claimed %d jobs, %v; want 3", len(got), err)
	}
	claimTrips := rt.n.Load() - before
	if claimTrips != 2 {
		t.Fatalf("a claim of 3 jobs, one on each of 3 hosts, took %d round trips; want 2 (the ready hosts, the scripts)", claimTrips)
	}
	if _, err := q.Charge(now, got); err != nil {
		t.Fatal(err)
	}
	if trips := rt.n.Load() - before; trips != claimTrips+1 {
		t.Fatalf("a claim took %d round trips and its charge %d more; want 1", claimTrips, trips-claimTrips)
	}
	v, err := l.ClusterView(t.Context(), now)
	if err != nil || v.Queued != 6 {
		t.Fatalf("cluster view: %d queued, %v; want 6 (12 pushed, 6 claimed)", v.Queued, err)
	}
}

// A crawl without a budget counts each claim as a page, and a job that
// ended without a dispatch (cancelled, unroutable) gives it back: its
// pages are the jobs dispatched, as on the embedded store (they stayed
// counted).
func TestCrawlRefundWithoutBudget(t *testing.T) {
	l := peers(t, client(t), 1, ledger.Config{})[0]
	q := l.Crawls()
	if err := q.SaveCrawl(admin.Crawl{Name: "open", Scope: "host", State: admin.CrawlRunning}); err != nil {
		t.Fatal(err)
	}
	specs := []broker.Spec{crawlSpec("open", 0), crawlSpec("open", 1), crawlSpec("open", 2)}
	if r, err := q.Charge(time.Now(), specs); err != nil || r[0] != 0 || r[1] != 0 || r[2] != 0 {
		t.Fatalf("charge: %v, %v; want all three charged", r, err)
	}
	q.Refund(time.Now(), []ledger.Item{{Key: specs[0].Key, FP: specs[0].FP}, {Key: specs[2].Key, FP: specs[2].FP}})
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
	cs, err := q.ReadCrawls()
	if err != nil || len(cs) != 1 || cs[0].Pages != 1 {
		t.Fatalf("crawls %+v, %v; want 1 page (3 claimed, 2 given back)", cs, err)
	}
}

// A page charged at a claim whose job ended without a dispatch comes
// back: the budget's next claim may spend it. A job the budget refused
// charged later (requeued) is charged once the page is back.
func TestCrawlRefund(t *testing.T) {
	l := peers(t, client(t), 1, ledger.Config{})[0]
	q := l.Crawls()
	if err := q.SaveCrawl(admin.Crawl{Name: "one", Scope: "host", MaxPages: 1, State: admin.CrawlRunning}); err != nil {
		t.Fatal(err)
	}
	a, b := crawlSpec("one", 0), crawlSpec("one", 1)
	if r, err := q.Charge(time.Now(), []broker.Spec{a, b}); err != nil || r[0] != 0 || r[1] != 1 {
		t.Fatalf("charge: %v, %v; want a charged, b refused", r, err)
	}
	q.Refund(time.Now(), []ledger.Item{{Key: a.Key, FP: a.FP}, {Key: b.Key, FP: b.FP}}) // b was not charged
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
	if r, err := q.Charge(time.Now(), []broker.Spec{b}); err != nil || r[0] != 0 {
		t.Fatalf("charge of b after a's refund: %v, %v; want it charged", r, err)
	}
	cs, err := q.ReadCrawls()
	if err != nil || len(cs) != 1 || cs[0].Pages != 1 {
		t.Fatalf("crawls %+v, %v; want one page spent (b's)", cs, err)
	}
	// A failed job requeued leaves the failed count.
	if _, err := q.PushBatch(time.Now(), []broker.Spec{b}); err != nil {
		t.Fatal(err)
	}
	got, err := q.Claim(time.Now(), 1)
	if err != nil || len(got) != 1 {
		t.Fatalf("claim: %d, %v", len(got), err)
	}
	q.Finish(time.Now(), nil, items(got))
	q.Unfail(time.Now(), items(got))
	q.Finish(time.Now(), items(got), nil)
	if tot := totals(t, l); tot.Failed != 0 || tot.Done != 1 {
		t.Fatalf("failed %d, done %d after the job failed, was requeued and done; want 0 and 1", tot.Failed, tot.Done)
	}
}
