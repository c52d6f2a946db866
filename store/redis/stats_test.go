package redis

import (
	"fmt"
	"testing"
	"time"

	"drover/admin"
	"drover/coord/broker"
	"drover/coord/ledger"
)

// totals reads the queue's cluster-wide counts as the cluster view does.
func totals(t *testing.T, l *Ledger) queueTotals {
	t.Helper()
	tot, err := l.readTotals(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return tot
}

// exactQueued fails t unless the cluster's queued count is want and
// equals the jobs in the hosts' queues.
func exactQueued(t *testing.T, q *Queue, want int64, when string) {
	t.Helper()
	inLists, _ := queueStats(t, q)
	if got := totals(t, q.l).Queued; got != want || inLists != want {
		t.Fatalf("%s: queued count %d, jobs in the queues %d; want both %d", when, got, inLists, want)
	}
}

// keySlot computes the slot Redis does (CLUSTER KEYSLOT), and the tag of
// every slot hashes to that slot: a stats hash is on its hosts' slot.
func TestKeySlot(t *testing.T) {
	rdb := client(t)
	for _, k := range []string{"drover:{a.example}:jq", "x", "{}y", "a{b}c{d}", "p:{h:8080}:pol", "{user1000}.following"} {
		want, err := rdb.ClusterKeySlot(t.Context(), k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := keySlot(k); got != int(want) {
			t.Fatalf("keySlot(%q) = %d; Redis says %d", k, got, want)
		}
	}
	for _, s := range []int{0, 1, 5461, 12182, slots - 1} {
		k := "p:{" + slotTag(s) + "}:stats"
		want, err := rdb.ClusterKeySlot(t.Context(), k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if int(want) != s {
			t.Fatalf("slot %d's tag %q: %s is on slot %d", s, slotTag(s), k, want)
		}
	}
	for s := range slots {
		if keySlot("{"+slotTag(s)+"}") != s {
			t.Fatalf("slot %d's tag %q hashes to %d", s, slotTag(s), keySlot(slotTag(s)))
		}
	}
}

// A job queued twice (a push sent again) is claimed once and both entries
// leave the queued count: it was left one too high for good.
func TestQueuedCountDuplicate(t *testing.T) {
	l, q := politeQueue(t, broker.Limits{PerHost: 3})
	job := politeJob("fetch", 0)
	if _, err := q.PushBatch(time.Now(), []broker.Spec{job, job, politeJob("fetch", 1)}); err != nil {
		t.Fatal(err)
	}
	exactQueued(t, q, 3, "after three pushes")
	got, err := q.Claim(time.Now(), 10)
	if err != nil || len(got) != 2 {
		t.Fatalf("claimed %d jobs, %v; want the two jobs, once each", len(got), err)
	}
	exactQueued(t, q, 0, "after the claim")
	q.Finish(time.Now(), items(got[:1]), items(got[1:]))
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
	if tot := totals(t, l); tot.Done != 1 || tot.Failed != 1 {
		t.Fatalf("done %d, failed %d; want 1 and 1", tot.Done, tot.Failed)
	}
}

// A claim whose answer was lost counted nothing out of the queue; the
// next Tick returns what it leased (forget): the count matches the
// queues throughout.
func TestQueuedCountLostClaimForgotten(t *testing.T) {
	hook := loseClaim()
	la, a, _, _ := claimPair(t, hookedClient(t, hook), "lostq")
	exactQueued(t, a, 2, "after the first claim")
	hook.armed.Store(true)
	if got, err := a.Claim(time.Now(), 1); err == nil || len(got) != 0 {
		t.Fatalf("a claim whose answer was lost: %d jobs, %v; want none and an error", len(got), err)
	}
	exactQueued(t, a, 1, "after the lost claim")
	la.Tick(time.Now())
	if a.Unclaimed != 1 {
		t.Fatalf("the Tick returned %d jobs; want the lost claim's 1", a.Unclaimed)
	}
	exactQueued(t, a, 2, "after the Tick")
}

// A coordinator that dies between a claim and its count (here: the
// claim's answer lost, then the coordinator swept before it could
// forget) leaves the count exact: the jobs the sweep returns were counted
// out by the claim that took them. It was counted back in without having
// been counted out: one too high per job, for good.
func TestQueuedCountClaimThenSwept(t *testing.T) {
	hook := loseClaim()
	la, a, _, _ := claimPair(t, hookedClient(t, hook), "sweptq")
	hook.armed.Store(true)
	if got, _ := a.Claim(time.Now(), 1); len(got) != 0 {
		t.Fatalf("a claim whose answer was lost: %d jobs; want none", len(got))
	}
	// what the sweep of a dead coordinator runs (peers.go)
	n, err := la.returnJobs(t.Context(), la.coord, la.hostList)
	if err != nil || n != 2 {
		t.Fatalf("returned %d jobs, %v; want 2 (the one claimed and the one the lost claim leased)", n, err)
	}
	exactQueued(t, a, 3, "after the sweep")
}

// A finish whose reply was lost after Redis ran it is sent again by the
// next Tick (to end the leases, in case it had not run) and counted once:
// it was counted twice.
func TestDoneCountedOnceAfterLostFinish(t *testing.T) {
	hook := &loseReply{op: "finish"}
	l, _ := hookedLedger(t, hook)
	q := l.Jobs()
	for i := range 3 {
		if _, err := q.Push(time.Now(), jobSpec(i)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := q.Claim(time.Now(), 10)
	if err != nil || len(got) != 3 {
		t.Fatalf("claimed %d jobs, %v; want 3", len(got), err)
	}
	hook.armed.Store(true)
	q.Finish(time.Now(), items(got[:2]), items(got[2:]))
	if hook.armed.Load() || l.Err() == nil {
		t.Fatalf("the finish did not meet the lost reply (error %v)", l.Err())
	}
	l.Tick(time.Now())
	if len(l.finRetry) != 0 {
		t.Fatalf("%d finish calls still kept after the Tick; want none (%v)", len(l.finRetry), l.Err())
	}
	if tot := totals(t, l); tot.Done != 2 || tot.Failed != 1 || tot.Queued != 0 {
		t.Fatalf("done %d, failed %d, queued %d; want 2, 1, 0 (each job counted once)", tot.Done, tot.Failed, tot.Queued)
	}
}

// A job its crawl's budget refused is claimed (out of the queue) and
// finished failed (counted failed once, its lease ended): the counts stay
// exact for the jobs a budget fails.
func TestCountsOfBudgetFailedJobs(t *testing.T) {
	l := peers(t, client(t), 1, ledger.Config{})[0]
	q := l.Crawls()
	if err := q.SaveCrawl(admin.Crawl{Name: "small", Scope: "host", MaxPages: 1, State: admin.CrawlRunning}); err != nil {
		t.Fatal(err)
	}
	specs := []broker.Spec{crawlSpec("small", 0), crawlSpec("small", 3)} // one host
	if _, err := q.PushBatch(time.Now(), specs); err != nil {
		t.Fatal(err)
	}
	got, err := q.Claim(time.Now(), 10)
	if err != nil || len(got) != 2 {
		t.Fatalf("claimed %d jobs, %v; want 2", len(got), err)
	}
	refused, err := q.Charge(time.Now(), got)
	if err != nil {
		t.Fatal(err)
	}
	var ran, failed []broker.Spec
	for i, r := range refused {
		if r > 0 {
			failed = append(failed, got[i])
		} else {
			ran = append(ran, got[i])
		}
	}
	if len(ran) != 1 {
		t.Fatalf("%d jobs may run; want 1 (the budget)", len(ran))
	}
	q.Finish(time.Now(), items(ran), items(failed))
	if tot := totals(t, l); tot.Done != 1 || tot.Failed != 1 || tot.Queued != 0 {
		t.Fatalf("done %d, failed %d, queued %d; want 1, 1, 0", tot.Done, tot.Failed, tot.Queued)
	}
	if _, leased := queueStats(t, q.Queue); leased != 0 {
		t.Fatalf("%d jobs still leased; want none", leased)
	}
}

// Many hosts over many slots: the totals are the sums of every slot's.
func TestTotalsOverSlots(t *testing.T) {
	l := peers(t, client(t), 1, ledger.Config{})[0]
	q := l.Jobs()
	specs := make([]broker.Spec, 200)
	for i := range specs {
		specs[i] = jobSpec(i)
		specs[i].Key.URL = fmt.Sprintf("http://s%d.example/", i)
		specs[i].FP = specs[i].Key.Fingerprint()
		specs[i].Host = fmt.Sprintf("s%d.example", i)
	}
	if _, err := q.PushBatch(time.Now(), specs); err != nil {
		t.Fatal(err)
	}
	exactQueued(t, q, 200, "after 200 pushes to 200 hosts")
	var got []broker.Spec
	for len(got) < 150 {
		c, err := q.Claim(time.Now(), 150-len(got))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c...)
	}
	exactQueued(t, q, 50, "after 150 claimed")
}
