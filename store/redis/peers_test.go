package redis

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"drover/clock"
	"drover/coord/id"
	"drover/coord/ledger"
)

// peers opens n coordinators' ledgers on one prefix of the test cluster.
func peers(t *testing.T, rdb goredis.UniversalClient, n int, cfg ledger.Config) []*Ledger {
	t.Helper()
	prefix := fmt.Sprintf("p%d", prefixes.Add(1))
	out := make([]*Ledger, n)
	for i := range out {
		l, err := newLedger(context.Background(), rdb, Config{Ledger: cfg, Prefix: prefix, Heartbeat: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = l
		t.Cleanup(func() { l.halt() })
	}
	return out
}

func webKey(i int) ledger.Item {
	k := id.Key{Crawler: "c", Processor: "p", URL: fmt.Sprintf("http://h%d.example/page/%d", i%50, i)}
	return ledger.Item{Key: k, FP: k.Fingerprint()}
}

// The same URLs submitted to two coordinators at once are accepted once:
// each key gets exactly one OK over both, the other asks wait.
func TestSameKeysAcceptedOnce(t *testing.T) {
	rdb := client(t)
	ls := peers(t, rdb, 2, ledger.Config{})
	const n = 3000
	items := make([]ledger.Item, n)
	for i := range items {
		items[i] = webKey(i)
	}
	results := make([][]ledger.Result, 2)
	var wg sync.WaitGroup
	for c := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i += 100 {
				results[c] = ls[c].RequestBatch(time.Now(), 1, uint64(i), items[i:i+100], results[c])
			}
		}()
	}
	wg.Wait()
	for c, l := range ls {
		if err := l.Err(); err != nil {
			t.Fatalf("coordinator %d: %v", c, err)
		}
	}
	for i := range items {
		a, b := results[0][i], results[1][i]
		oks := 0
		for _, r := range []ledger.Result{a, b} {
			switch r.Verdict {
			case ledger.OK:
				oks++
			case ledger.Wait:
			default:
				t.Fatalf("key %d: %v %v; want ok or wait", i, r.Verdict, r.Reason)
			}
		}
		if oks != 1 {
			t.Fatalf("key %d: answers %+v and %+v; want exactly one ok", i, a, b)
		}
	}
	// Each queues what it got; the other's waiters are told "queued".
	for c, l := range ls {
		var mine []id.Fingerprint
		for i, r := range results[c] {
			if r.Verdict == ledger.OK {
				mine = append(mine, items[i].FP)
			}
		}
		for _, r := range l.QueueBatch(time.Now(), 1, mine, nil) {
			if r.Verdict != ledger.OK {
				t.Fatalf("coordinator %d: queue: %v %v", c, r.Verdict, r.Reason)
			}
		}
	}
	for c, l := range ls {
		got, err := clusterCounts(l)
		if want := (ledger.Counts{Queued: n}); err != nil || got != want {
			t.Fatalf("coordinator %d: cluster counts after queueing every key = %+v, %v; want %+v", c, got, err, want)
		}
	}
	waitAnswers(t, ls, n)
}

// waitAnswers polls both ledgers until, together, they have given n
// deferred answers.
func waitAnswers(t *testing.T, ls []*Ledger, n int) []ledger.Answer {
	t.Helper()
	return waitAnswersBy(t, ls, n, true)
}

// waitAnswersBy is waitAnswers; without tick, only notifications answer.
func waitAnswersBy(t *testing.T, ls []*Ledger, n int, tick bool) []ledger.Answer {
	t.Helper()
	var got []ledger.Answer
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < n {
		if time.Now().After(deadline) {
			var errs []error
			for _, l := range ls {
				errs = append(errs, l.Err())
			}
			t.Fatalf("%d deferred answers after 30s; want %d (store errors %v)", len(got), n, errs)
		}
		for _, l := range ls {
			if tick {
				l.Tick(time.Now())
			}
			got = l.TakeAnswers(got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return got
}

// A waiter on one coordinator is handed a key released on another: by the
// notification, and, when the notification is lost, by the heartbeat's poll.
func TestHandoverAcrossCoordinators(t *testing.T) {
	rdb := client(t)
	for _, lost := range []bool{false, true} {
		t.Run(fmt.Sprintf("notification-lost=%v", lost), func(t *testing.T) {
			ls := peers(t, rdb, 2, ledger.Config{RequestTTL: time.Minute})
			a, b := ls[0], ls[1]
			it := webKey(7)
			now := time.Now()
			if v, r := a.Request(now, 1, 1, it.Key, it.FP); v != ledger.OK {
				t.Fatalf("a: %v %v", v, r)
			}
			if v, r := b.Request(now, 5, 42, it.Key, it.FP); v != ledger.Wait {
				t.Fatalf("b: %v %v; want wait", v, r)
			}
			if lost {
				b.inbox.close() // no notifications any more (the heartbeat goes on)
			}
			a.Release(time.Now(), 1)
			// Without the notification only the heartbeat's poll answers;
			// with it, no tick is needed.
			got := waitAnswersBy(t, []*Ledger{b}, 1, lost)
			want := ledger.Answer{Session: 5, ReqID: 42, FP: it.FP, Verdict: ledger.OK, Reason: ledger.ReasonHandover}
			if got[0] != want {
				t.Fatalf("b's answer = %+v; want %+v", got[0], want)
			}
			if v, r := b.Queue(time.Now(), 5, it.FP); v != ledger.OK {
				t.Fatalf("b queues the key it was handed: %v %v", v, r)
			}
			if rec, ok := a.LookupKey(time.Now(), it.Key, it.FP); !ok || rec.State != ledger.Queued {
				t.Fatalf("a sees %+v %v; want queued", rec, ok)
			}
		})
	}
}

// A coordinator that stops heartbeating is swept by a live one: its keys
// pass to their waiters (on the live coordinator) or are removed.
func TestDeadCoordinatorSwept(t *testing.T) {
	rdb := client(t)
	ls := peers(t, rdb, 2, ledger.Config{})
	dead, live := ls[0], ls[1]
	now := time.Now()
	var held []ledger.Item
	for i := range 20 {
		it := webKey(i)
		held = append(held, it)
		if v, r := dead.Request(now, 3, 1, it.Key, it.FP); v != ledger.OK {
			t.Fatalf("%v %v", v, r)
		}
	}
	if v, _ := live.Request(now, 9, 77, held[4].Key, held[4].FP); v != ledger.Wait {
		t.Fatalf("live waits on a dead one's key: %v", v)
	}
	dead.halt() // the process is gone: no more heartbeats
	start := time.Now()
	got := waitAnswers(t, []*Ledger{live}, 1)
	want := ledger.Answer{Session: 9, ReqID: 77, FP: held[4].FP, Verdict: ledger.OK, Reason: ledger.ReasonHandover}
	if got[0] != want {
		t.Fatalf("after the sweep: %+v; want %+v", got[0], want)
	}
	if live.Swept != 1 {
		t.Fatalf("live swept %d coordinators; want 1", live.Swept)
	}
	t.Logf("handed over %v after the last heartbeat (alive TTL %v)", time.Since(start).Round(100*time.Millisecond), 3*time.Second)
	for i, it := range held {
		rec, ok := live.LookupKey(time.Now(), it.Key, it.FP)
		switch {
		case i == 4 && (!ok || rec.Owner != 9):
			t.Fatalf("key 4: %+v %v; want held by session 9", rec, ok)
		case i != 4 && ok:
			t.Fatalf("key %d: %+v; want removed with its dead owner", i, rec)
		}
	}
}

// A coordinator whose clock runs an hour ahead must not take another's
// key by expiring its lease early: with ServerClock the scripts read the
// server's time, and the lease holds.
func TestClockSkew(t *testing.T) {
	rdb := client(t)
	prefix := fmt.Sprintf("sk%d", prefixes.Add(1))
	cfg := Config{Ledger: ledger.Config{RequestTTL: 30 * time.Second}, Prefix: prefix, ServerClock: true}
	a, err := newLedger(context.Background(), rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := newLedger(context.Background(), rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	it := webKey(1)
	if v, r := a.Request(time.Now(), 1, 1, it.Key, it.FP); v != ledger.OK {
		t.Fatalf("a: %v %v", v, r)
	}
	ahead := time.Now().Add(time.Hour)
	if v, r := b.Request(ahead, 2, 1, it.Key, it.FP); v != ledger.Wait {
		t.Fatalf("b, an hour ahead: %v %v; want wait (a's lease is young by the server's clock)", v, r)
	}
	b.Tick(ahead)
	if rec, ok := b.LookupKey(time.Now(), it.Key, it.FP); !ok || rec.Owner != 0 || rec.Waiters != 1 {
		t.Fatalf("after b's tick an hour ahead: %+v %v; want still a's (owner 0 seen from b) with b waiting", rec, ok)
	}
	// Without the server's clock the skewed coordinator would have taken
	// it: the hazard this option removes.
	cfg.ServerClock, cfg.Prefix = false, prefix+"x"
	c, _ := newLedger(context.Background(), rdb, cfg)
	d, _ := newLedger(context.Background(), rdb, cfg)
	c.Request(time.Now(), 1, 1, it.Key, it.FP)
	if v, _ := d.Request(ahead, 2, 1, it.Key, it.FP); v != ledger.OK {
		t.Fatalf("caller's clock an hour ahead: %v; want ok (the lease expired by its clock)", v)
	}
}

// clusterCounts sums the counters of every host any coordinator on the
// cluster has touched (PREFIX:hosts): the cluster-wide totals.
func clusterCounts(l *Ledger) (ledger.Counts, error) {
	ctx, cancel := l.ctx()
	defer cancel()
	hosts, err := l.rdb.SMembers(ctx, l.cfg.Prefix+":hosts").Result()
	if err != nil {
		return ledger.Counts{}, fmt.Errorf("redis ledger: listing hosts: %w", err)
	}
	l.err = nil
	c := l.sum(hosts)
	return c, l.err
}

// A coordinator swept while paused, which joins again, registers again
// the hosts it remembers: a lease it takes there after its return is
// found by the sweep when it dies for good, and its job goes back to the
// queue, not held by the dead for ever.
func TestRejoinedCoordinatorSweptAgain(t *testing.T) {
	ls := peers(t, client(t), 2, ledger.Config{})
	live, paused := ls[0], ls[1]
	q := paused.Jobs()
	for i := range 2 {
		if _, err := live.Jobs().Push(time.Now(), politeJob("fetch", i)); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := q.Claim(time.Now(), 1); err != nil || len(got) != 1 {
		t.Fatalf("first claim: %d jobs, %v; want 1", len(got), err)
	}
	ctx := t.Context()
	live.sweepCoordinator(ctx, time.Now(), paused.Coordinator()) // taken for dead during a pause
	paused.Maintain(time.Now())
	if paused.Rejoined != 1 {
		t.Fatalf("the swept coordinator rejoined %d times; want 1", paused.Rejoined)
	}
	got, err := q.Claim(time.Now(), 1)
	if err != nil || len(got) != 1 {
		t.Fatalf("claim after the return: %d jobs, %v; want 1", len(got), err)
	}
	live.sweepCoordinator(ctx, time.Now(), paused.Coordinator()) // dead for good
	leases := paused.pre(got[0].Host) + "jl:" + paused.Coordinator()
	if n, err := paused.rdb.HLen(ctx, leases).Result(); err != nil || n != 0 {
		t.Fatalf("after the second sweep the dead coordinator still leases %d jobs, %v; want 0 (back in the queue)", n, err)
	}
}

// The heartbeat goroutine renews the alive key on the ledger's clock: a
// key gone (as after a pause longer than its TTL) comes back once the
// fake clock passes a heartbeat, and each renewal waits for the next.
func TestHeartbeatOnTheClock(t *testing.T) {
	rdb := client(t)
	clk := clock.NewFake(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	l, err := newLedger(context.Background(), rdb, Config{Prefix: fmt.Sprintf("hb%d", prefixes.Add(1)), Heartbeat: time.Minute, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.halt)
	ctx := context.Background()
	alive := func() bool {
		n, err := rdb.Exists(ctx, l.aliveKey(l.coord)).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	for round := range 2 {
		if d := <-clk.Created(); d != time.Minute { // the goroutine waits a heartbeat
			t.Fatalf("round %d: a timer of %v; want the heartbeat's minute", round, d)
		}
		if err := rdb.Del(ctx, l.aliveKey(l.coord)).Err(); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Minute)
		deadline := time.Now().Add(10 * time.Second)
		for !alive() {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: no alive key 10 s after the fake clock passed a heartbeat", round)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
