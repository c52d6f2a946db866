package redis

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"drover/coord"
	"drover/coord/broker"
	"drover/coord/id"
	"drover/coord/ledger"

	goredis "github.com/redis/go-redis/v9"
)

// politeJob is job i of one host, of processor proc.
func politeJob(proc string, i int) broker.Spec {
	k := id.Key{Crawler: "c", Processor: proc, URL: fmt.Sprintf("http://polite.example/%s/%d", proc, i)}
	return broker.Spec{Key: k, FP: k.Fingerprint(), Host: id.Host(k.URL)}
}

// A host's politeness holds across coordinators: with a cap of 1 and an
// interval, a second coordinator claims none of the host's fetches while
// the first holds one, nor within the interval after it finished it;
// jobs of other processors are claimed meanwhile. A dead coordinator's
// lease, swept, frees the host's slot.
func TestSharedQueuePolitenessAcrossCoordinators(t *testing.T) {
	rdb := client(t)
	ls := peers(t, rdb, 2, ledger.Config{})
	a, b := ls[0].Jobs(), ls[1].Jobs()
	const gap = 2 * time.Second
	policy := coord.SharedPolicy{
		Applies: func(p string) bool { return p == "fetch" },
		Limits:  func(string) broker.Limits { return broker.Limits{PerHost: 1, MinDelay: gap} },
	}
	a.HoldPoliteness(policy)
	b.HoldPoliteness(policy)
	now := time.Now()
	for i := range 3 {
		for _, p := range []string{"fetch", "exec"} {
			if _, err := a.Push(now, politeJob(p, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	claim := func(q *Queue, n int) (fetch, other int) {
		t.Helper()
		specs, err := q.Claim(time.Now(), n)
		if err != nil {
			t.Fatal(err)
		}
		for _, sp := range specs {
			if sp.Key.Processor == "fetch" {
				fetch++
			} else {
				other++
			}
		}
		return fetch, other
	}
	// a takes one fetch (its cap) and an exec job; b then only exec jobs.
	if f, o := claim(a, 2); f != 1 || o != 1 {
		t.Fatalf("a claimed %d fetches and %d others; want 1 fetch (cap 1) and 1 other", f, o)
	}
	if f, o := claim(b, 10); f != 0 || o != 2 {
		t.Fatalf("b claimed %d fetches and %d others while a holds the host's one slot; want 0 and the 2 others", f, o)
	}
	fin := politeJob("fetch", 0)
	ended := time.Now()
	a.Finish(ended, []ledger.Item{{Key: fin.Key, FP: fin.FP}}, nil)
	// The slot is free, but the host waits an interval from the end.
	if got := claimSome(t, b, 10); len(got) != 1 || got[0].Key.Processor != "fetch" {
		t.Fatalf("b claimed %d jobs after the end; want the host's 1 fetch", len(got))
	}
	if took := time.Since(ended); took < gap {
		t.Fatalf("b claimed the host's next fetch %v after a finished one; want at least the interval %v", took, gap)
	}
	// b dies holding the slot: a claims nothing of the host until it has
	// swept b, then b's fetch is back and the slot free.
	if f, _ := claim(a, 10); f != 0 {
		t.Fatalf("a claimed %d fetches while b holds the slot; want 0", f)
	}
	ls[1].halt()
	awaitSwept(t, ls[0])
	for done := 0; done < 2; { // b's fetch and the last; b's exec jobs come back too
		var fetches []broker.Spec
		for _, sp := range claimSome(t, a, 10) {
			if sp.Key.Processor == "fetch" {
				fetches = append(fetches, sp)
			}
		}
		if len(fetches) > 1 {
			t.Fatalf("a claimed %d fetches at once; want one at a time", len(fetches))
		}
		a.Finish(time.Now(), items(fetches), nil)
		done += len(fetches)
	}
}

// A longer interval one coordinator gives a host (its workers read the
// host's robots.txt Crawl-delay) holds for the others while the host is
// busy: b, whose own interval is 0, waits a's after its own fetch ends.
func TestSharedQueueIntervalSharedWhileBusy(t *testing.T) {
	rdb := client(t)
	ls := peers(t, rdb, 2, ledger.Config{})
	a, b := ls[0].Jobs(), ls[1].Jobs()
	const gap = 1500 * time.Millisecond
	applies := func(p string) bool { return p == "fetch" }
	a.HoldPoliteness(coord.SharedPolicy{Applies: applies, Limits: func(string) broker.Limits { return broker.Limits{PerHost: 1, MinDelay: gap} }})
	b.HoldPoliteness(coord.SharedPolicy{Applies: applies, Limits: func(string) broker.Limits { return broker.Limits{PerHost: 1} }})
	now := time.Now()
	for i := range 3 {
		if _, err := a.Push(now, politeJob("fetch", i)); err != nil {
			t.Fatal(err)
		}
	}
	// claimed polls q until it claims a job, and returns it.
	claimed := func(q *Queue) broker.Spec {
		t.Helper()
		specs := claimSome(t, q, 10)
		if len(specs) > 1 {
			t.Fatalf("claimed %d jobs; want one at a time", len(specs))
		}
		return specs[0]
	}
	j0 := claimed(a)
	a.Finish(time.Now(), items([]broker.Spec{j0}), nil)
	j1 := claimed(b)
	ended := time.Now()
	b.Finish(ended, items([]broker.Spec{j1}), nil)
	claimed(b)
	if took := time.Since(ended); took < gap {
		t.Fatalf("b claimed the host's next fetch %v after its own ended; want at least a's interval %v", took, gap)
	}
}

// A claim over a crawl of many polite hosts (one job each per interval)
// takes a job from each of up to 64 hosts at once, not from 8: the
// claimer's window fills in one claim.
func TestClaimManyPoliteHosts(t *testing.T) {
	_, q := politeQueue(t, broker.Limits{PerHost: 1, MinDelay: time.Minute})
	var specs []broker.Spec
	for i := range 80 {
		k := id.Key{Crawler: "c", Processor: "fetch", URL: fmt.Sprintf("http://p%d.example/%d", i%40, i)}
		specs = append(specs, broker.Spec{Key: k, FP: k.Fingerprint(), Host: id.Host(k.URL)})
	}
	if _, err := q.PushBatch(time.Now(), specs); err != nil {
		t.Fatal(err)
	}
	got, err := q.Claim(time.Now(), 64)
	if err != nil {
		t.Fatal(err)
	}
	hosts := make(map[string]int)
	for _, sp := range got {
		hosts[sp.Host]++
	}
	if len(got) != 40 || len(hosts) != 40 {
		t.Fatalf("one claim of 64 over 40 polite hosts (2 jobs each, 1 at once, a minute apart): %d jobs from %d hosts; want one from each of the 40", len(got), len(hosts))
	}
}

// A claim that finds a host's polite jobs waiting for its interval says
// how long until the host is due (PoliteWait): within the interval; one
// that finds it at its cap or with nothing waiting says 0.
func TestClaimPoliteWait(t *testing.T) {
	const gap = 30 * time.Second
	_, q := politeQueue(t, broker.Limits{PerHost: 2, MinDelay: gap})
	for i := range 3 {
		if _, err := q.Push(time.Now(), politeJob("fetch", i)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := q.Claim(time.Now(), 10)
	if err != nil || len(got) != 1 {
		t.Fatalf("first claim: %d jobs, %v; want 1 (one per interval)", len(got), err)
	}
	if w := q.PoliteWait(); w <= 0 || w > gap {
		t.Fatalf("after a claim, the host's interval ahead: wait %v; want within (0, %v]", w, gap)
	}
	if got, _ = q.Claim(time.Now(), 10); len(got) != 0 {
		t.Fatalf("a claim within the interval took %d jobs; want none", len(got))
	}
	if w := q.PoliteWait(); w <= 0 || w > gap {
		t.Fatalf("a claim within the interval: wait %v; want within (0, %v]", w, gap)
	}
	q.Finish(time.Now(), items(append(got, politeJob("fetch", 0))), nil)
	if _, err := q.Claim(time.Now(), 10); err != nil || q.PoliteWait() <= 0 {
		t.Fatalf("after the end of the host's fetch: wait %v, %v; want the interval from the end", q.PoliteWait(), err)
	}
}

// A host's next time set far ahead (as by a master whose clock was ahead
// of the one that took over) holds its polite jobs at most an interval.
func TestClaimNextClampedToInterval(t *testing.T) {
	const gap = 200 * time.Millisecond
	l, q := politeQueue(t, broker.Limits{PerHost: 1, MinDelay: gap})
	job := politeJob("fetch", 0)
	if _, err := q.Push(time.Now(), job); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	pol := l.pre(job.Host) + "pol"
	now, err := l.rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	ahead := now.Add(time.Hour).UnixMicro()
	if err := l.rdb.HSet(ctx, pol, "n", 0, "next", ahead, "g", 0).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := q.Claim(time.Now(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 {
		if w := q.PoliteWait(); w <= 0 || w > gap {
			t.Fatalf("the host's next an hour ahead: wait %v; want within (0, %v] (the interval)", w, gap)
		}
	}
	if len(got) == 0 {
		claimSome(t, q, 10) // within a minute, not an hour
	}
}

// Jobs naming a back-off key other than their URLs' hosts share that
// host's politeness, as in the broker: with a cap of 1, two jobs whose
// URLs are on two hosts but which name one are claimed one at a time, and
// the first's end frees the slot for the second.
func TestPolitenessByBackoffKey(t *testing.T) {
	l, q := politeQueue(t, broker.Limits{PerHost: 1})
	var specs []broker.Spec
	for _, u := range []string{"http://a.example/1", "http://b.example/2"} {
		k := id.Key{Crawler: "c", Processor: "fetch", URL: u}
		specs = append(specs, broker.Spec{Key: k, FP: k.Fingerprint(), Host: "group.example"})
	}
	if _, err := q.PushBatch(time.Now(), specs); err != nil {
		t.Fatal(err)
	}
	got, err := q.Claim(time.Now(), 10)
	if err != nil || len(got) != 1 {
		t.Fatalf("claimed %d jobs, %v; want 1 (two jobs naming one host of cap 1)", len(got), err)
	}
	if got[0].Host != "group.example" {
		t.Fatalf("claimed job's host %q; want the back-off key it named", got[0].Host)
	}
	if n, err := l.rdb.HGet(t.Context(), l.pre("group.example")+"pol", "n").Int(); err != nil || n != 1 {
		t.Fatalf("group.example's record: %d leased, %v; want 1", n, err)
	}
	if again, _ := q.Claim(time.Now(), 10); len(again) != 0 {
		t.Fatalf("claimed %d more while the host's slot is taken; want 0", len(again))
	}
	q.Finish(time.Now(), items(got), nil)
	again, err := q.Claim(time.Now(), 10)
	if err != nil || len(again) != 1 || again[0].FP == got[0].FP {
		t.Fatalf("after the first ended: claimed %d jobs, %v; want the other one", len(again), err)
	}
}

// A polite job queued twice (a push sent again) is leased once and takes
// one slot, which its end frees: the host's count of leased jobs goes
// back to 0, not to the duplicates' number for good.
func TestDuplicateEntryTakesOneSlot(t *testing.T) {
	l, q := politeQueue(t, broker.Limits{PerHost: 2})
	job := politeJob("fetch", 0)
	if _, err := q.PushBatch(time.Now(), []broker.Spec{job, job}); err != nil {
		t.Fatal(err)
	}
	got, err := q.Claim(time.Now(), 10)
	if err != nil || len(got) != 1 {
		t.Fatalf("claimed %d jobs, %v; want the one job, once", len(got), err)
	}
	q.Finish(time.Now(), items(got), nil)
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
	n, err := l.rdb.HGet(t.Context(), l.pre(job.Host)+"pol", "n").Int()
	if err != nil && !errors.Is(err, goredis.Nil) {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("after the job's end the host has %d polite jobs leased; want 0", n)
	}
}
