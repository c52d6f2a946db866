package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"drover/admin"
	"drover/coord"
	"drover/coord/broker"
	"drover/coord/id"
	"drover/coord/ledger"
)

func jobSpec(i int) broker.Spec {
	k := id.Key{Crawler: "c", Processor: "p", URL: fmt.Sprintf("http://h%d.example/page/%d", i%10, i)}
	return broker.Spec{Key: k, FP: k.Fingerprint(), Host: id.Host(k.URL),
		Headers: map[string]string{"n": fmt.Sprint(i)}, Payload: []byte{byte(i), 0, 1}}
}

// Jobs pushed by one coordinator are claimed by two, each exactly once,
// with their headers and payloads; the jobs a coordinator leased when it
// died go back to the queue when a peer sweeps it, and the peer claims
// them; finished jobs do not come back.
func TestSharedQueueClaimAndSweep(t *testing.T) {
	rdb := client(t)
	ls := peers(t, rdb, 2, ledger.Config{})
	a, b := ls[0].Jobs(), ls[1].Jobs()
	now := time.Now()
	const n = 200
	ids := make(map[uint64]bool)
	for i := range n {
		j, err := a.Push(now, jobSpec(i))
		if err != nil {
			t.Fatal(err)
		}
		if j == 0 || ids[j] {
			t.Fatalf("push %d: job id %d; want a new id >= 1", i, j)
		}
		ids[j] = true
	}
	seen := make(map[string]int)
	claim := func(q *Queue, want int) []broker.Spec {
		t.Helper()
		var got []broker.Spec
		deadline := time.Now().Add(30 * time.Second)
		for len(got) < want && time.Now().Before(deadline) {
			specs, err := q.Claim(time.Now(), want-len(got))
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, specs...)
		}
		if len(got) != want {
			t.Fatalf("claimed %d jobs; want %d", len(got), want)
		}
		for _, sp := range got {
			seen[sp.Key.URL]++
			var i int
			fmt.Sscanf(sp.Headers["n"], "%d", &i)
			if w := jobSpec(i); sp.FP != w.FP || sp.Host != w.Host || string(sp.Payload) != string(w.Payload) {
				t.Fatalf("claimed %+v; want %+v", sp, w)
			}
		}
		return got
	}
	onB := claim(b, 50)
	onA := claim(a, n-50)
	if specs, err := a.Claim(now, 10); err != nil || len(specs) != 0 {
		t.Fatalf("claim from an empty queue: %d jobs, %v; want none", len(specs), err)
	}
	a.Finish(now, items(onA), nil)
	// b dies; a sweeps it and claims its 50 jobs again.
	ls[1].halt()
	deadline := time.Now().Add(time.Minute)
	for ls[0].Swept == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("b was not swept within a minute (alive TTL 3s)")
		}
		ls[0].Maintain(time.Now())
		time.Sleep(200 * time.Millisecond) // polling the sweep, whose TTL is Redis's
	}
	if a.Returned != 50 {
		t.Fatalf("the sweep returned %d jobs; want b's 50", a.Returned)
	}
	again := claim(a, 50)
	for _, sp := range onB {
		seen[sp.Key.URL]-- // claimed twice: by b, and by a after b's death
	}
	for i := range n {
		if c := seen[jobSpec(i).Key.URL]; c != 1 {
			in := func(xs []broker.Spec) int {
				k := 0
				for _, x := range xs {
					if x.Key.URL == jobSpec(i).Key.URL {
						k++
					}
				}
				return k
			}
			t.Fatalf("job %d claimed %d times net of b's; want 1 (a %d, b %d, again %d)", i, c, in(onA), in(onB), in(again))
		}
	}
	a.Finish(now, items(again), nil)
	if queued, leased := queueStats(t, a); queued != 0 || leased != 0 {
		t.Fatalf("after every job finished: %d queued, %d leased; want none", queued, leased)
	}
}

func items(specs []broker.Spec) []ledger.Item {
	out := make([]ledger.Item, len(specs))
	for i, sp := range specs {
		out[i] = ledger.Item{Key: sp.Key, FP: sp.FP}
	}
	return out
}

// Each coordinator's summary shows in the cluster view, with the shared
// queue's length, the jobs the live coordinators claimed and the jobs
// done and failed on the cluster; a coordinator whose heartbeat expired
// shows as not alive, and is left out a minute later, its jobs done still
// counted.
func TestClusterView(t *testing.T) {
	rdb := client(t)
	ls := peers(t, rdb, 2, ledger.Config{})
	now := time.Now()
	for i := range 5 {
		if _, err := ls[0].Jobs().Push(now, jobSpec(i)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ls[1].Jobs().Claim(now, 3)
	if err != nil || len(got) != 3 {
		t.Fatalf("claimed %d jobs, %v; want 3", len(got), err)
	}
	ls[1].Jobs().Finish(now, items(got[:1]), items(got[1:2]))
	for i, l := range ls {
		if err := l.PublishSummary(t.Context(), admin.ClusterCoordinator{Peers: fmt.Sprintf("tcp://c%d", i), Done: 10 * (i + 1), Dispatched: i * 2, Heartbeat: now}); err != nil {
			t.Fatal(err)
		}
	}
	v, err := ls[0].ClusterView(t.Context(), now)
	if err != nil {
		t.Fatal(err)
	}
	if v.Queued != 2 || v.Claimed != 2 || v.Done != 1 || v.Failed != 1 || len(v.Coordinators) != 2 {
		t.Fatalf("view %+v; want 2 queued, 2 claimed (as published), 1 done, 1 failed, 2 coordinators", v)
	}
	for i, c := range v.Coordinators {
		if c.ID != ls[i].Coordinator() || !c.Alive || c.Peers != fmt.Sprintf("tcp://c%d", i) {
			t.Fatalf("coordinator %d: %+v; want id %s, alive, its peers", i, c, ls[i].Coordinator())
		}
	}
	ls[1].halt()
	rdb.Del(t.Context(), ls[1].aliveKey(ls[1].Coordinator())) // its heartbeat expired
	if v, _ = ls[0].ClusterView(t.Context(), now); len(v.Coordinators) != 2 || v.Coordinators[1].Alive || v.Claimed != 0 || v.Done != 1 || v.Failed != 1 {
		t.Fatalf("after b's heartbeat expired: %+v; want b listed, not alive, its claims not counted, its jobs done and failed counted", v)
	}
	if v, _ = ls[0].ClusterView(t.Context(), now.Add(2*forgetSummary)); len(v.Coordinators) != 1 || v.Done != 1 || v.Failed != 1 {
		t.Fatalf("two minutes later: %+v; want b left out, its jobs done and failed still counted", v)
	}
}

// With WaitReplicas the queue's pushes wait for a replica, as the
// ledger's transitions do: on a cluster with its replicas up every job
// is taken (an id for each) and claimed.
func TestSharedQueueWaitsForReplicas(t *testing.T) {
	rdb := client(t)
	l, err := newLedger(context.Background(), rdb, Config{Prefix: fmt.Sprintf("wq%d", prefixes.Add(1)), WaitReplicas: 1, WaitTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	q := l.Jobs()
	specs := make([]broker.Spec, 30)
	for i := range specs {
		specs[i] = jobSpec(i)
	}
	ids, err := q.PushBatch(time.Now(), specs)
	if err != nil {
		t.Fatal(err)
	}
	for i, j := range ids {
		if j == 0 {
			t.Fatalf("job %d not taken with its replica up", i)
		}
	}
	var got []broker.Spec
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < len(specs) && time.Now().Before(deadline) {
		sp, err := q.Claim(time.Now(), len(specs)-len(got))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, sp...)
	}
	if len(got) != len(specs) {
		t.Fatalf("claimed %d of %d", len(got), len(specs))
	}
}

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
	var took time.Duration
	deadline := time.Now().Add(time.Minute)
	for {
		f, _ := claim(b, 10)
		if f == 1 {
			took = time.Since(ended)
			break
		}
		if f > 1 || time.Now().After(deadline) {
			t.Fatalf("b claimed %d fetches; want 1, within a minute", f)
		}
		time.Sleep(50 * time.Millisecond) // polling the server's clock
	}
	if took < gap {
		t.Fatalf("b claimed the host's next fetch %v after a finished one; want at least the interval %v", took, gap)
	}
	// b dies holding the slot: a claims nothing of the host until it has
	// swept b, then b's fetch is back and the slot free.
	if f, _ := claim(a, 10); f != 0 {
		t.Fatalf("a claimed %d fetches while b holds the slot; want 0", f)
	}
	ls[1].halt()
	deadline = time.Now().Add(time.Minute)
	for ls[0].Swept == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("b was not swept within a minute (alive TTL 3s)")
		}
		ls[0].Maintain(time.Now())
		time.Sleep(200 * time.Millisecond) // polling the sweep, whose TTL is Redis's
	}
	got := 0
	for got < 2 {
		f, _ := claim(a, 10)
		got += f
		if f > 1 || time.Now().After(deadline) {
			t.Fatalf("a claimed %d fetches at once (%d in all); want one at a time, both within a minute", f, got)
		}
		if got == 1 {
			a.Finish(time.Now(), items([]broker.Spec{politeJob("fetch", 1), politeJob("fetch", 2)}), nil)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// roundTrips counts the commands and pipelines a client sends (a hook).
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next goredis.DialHook) goredis.DialHook { return next }
func (r *roundTrips) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmd)
	}
}
func (r *roundTrips) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmds)
	}
}

// A claim over several hosts sends their scripts in one pipeline: a
// handful of round trips, not one per host.
func TestClaimPipelined(t *testing.T) {
	client(t) // the cluster, or skip
	rdb := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: cluster.Addrs()})
	t.Cleanup(func() { rdb.Close() })
	var rt roundTrips
	rdb.AddHook(&rt)
	l, err := newLedger(context.Background(), rdb, Config{Prefix: fmt.Sprintf("pipe%d", prefixes.Add(1))})
	if err != nil {
		t.Fatal(err)
	}
	q := l.Jobs()
	now := time.Now()
	var specs []broker.Spec
	for i := range 160 {
		specs = append(specs, jobSpec(i)) // 10 hosts, 16 jobs each
	}
	if _, err := q.PushBatch(now, specs); err != nil {
		t.Fatal(err)
	}
	// The first claim runs the script on each node once (NOSCRIPT, then
	// EVAL); count from the second.
	if _, err := q.Claim(now, 8); err != nil {
		t.Fatal(err)
	}
	before := rt.n.Load()
	got, err := q.Claim(now, 64)
	if err != nil {
		t.Fatal(err)
	}
	trips := rt.n.Load() - before
	if len(got) != 64 {
		t.Fatalf("claimed %d jobs over 10 hosts of 16; want 64", len(got))
	}
	// SRANDMEMBER, the hosts' registration, the scripts, the queued
	// counter: 4 (a host picked with fewer jobs than its share adds a
	// round).
	if trips > 4+claimRounds-1 {
		t.Fatalf("a claim of 64 jobs over 10 hosts took %d round trips; want at most %d (the hosts' scripts pipelined)", trips, 4+claimRounds-1)
	}
	t.Logf("a claim of 64 jobs over 10 hosts: %d round trips", trips)
}

// queueStats counts the shared queue's jobs queued and leased to live
// coordinators on every host any coordinator touched.
func queueStats(t *testing.T, q *Queue) (queued, leased int64) {
	t.Helper()
	l, ctx := q.l, t.Context()
	hosts, err := l.rdb.SMembers(ctx, l.cfg.Prefix+":hosts").Result()
	if err != nil {
		t.Fatal(err)
	}
	live, err := l.rdb.SMembers(ctx, l.liveSet()).Result()
	if err != nil {
		t.Fatal(err)
	}
	pipe := l.rdb.Pipeline()
	var qs, ls []*goredis.IntCmd
	for _, h := range hosts {
		qs = append(qs, pipe.LLen(ctx, l.pre(h)+"jq"), pipe.LLen(ctx, l.pre(h)+"pq"))
		for _, c := range live {
			ls = append(ls, pipe.HLen(ctx, l.pre(h)+"jl:"+c), pipe.HLen(ctx, l.pre(h)+"pl:"+c))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range qs {
		queued += c.Val()
	}
	for _, c := range ls {
		leased += c.Val()
	}
	return queued, leased
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
		deadline := time.Now().Add(time.Minute)
		for {
			specs, err := q.Claim(time.Now(), 10)
			if err != nil || len(specs) > 1 {
				t.Fatalf("claimed %d jobs, %v; want one at a time", len(specs), err)
			}
			if len(specs) == 1 {
				return specs[0]
			}
			if time.Now().After(deadline) {
				t.Fatalf("no job claimed within a minute")
			}
			time.Sleep(50 * time.Millisecond) // polling the server's clock
		}
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
	rdb := client(t)
	l := peers(t, rdb, 1, ledger.Config{})[0]
	q := l.Jobs()
	q.HoldPoliteness(coord.SharedPolicy{
		Applies: func(string) bool { return true },
		Limits:  func(string) broker.Limits { return broker.Limits{PerHost: 1, MinDelay: time.Minute} },
	})
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
	rdb := client(t)
	l := peers(t, rdb, 1, ledger.Config{})[0]
	q := l.Jobs()
	const gap = 30 * time.Second
	q.HoldPoliteness(coord.SharedPolicy{
		Applies: func(string) bool { return true },
		Limits:  func(string) broker.Limits { return broker.Limits{PerHost: 2, MinDelay: gap} },
	})
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

// failFinish is a hook that fails, once armed, the next pipeline carrying
// a finish script, as a transient error would.
type failFinish struct{ armed atomic.Bool }

func (f *failFinish) DialHook(next goredis.DialHook) goredis.DialHook          { return next }
func (f *failFinish) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook { return next }
func (f *failFinish) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		for _, c := range cmds {
			if slices.Contains(c.Args(), any("finish")) && f.armed.CompareAndSwap(true, false) {
				err := errors.New("injected: connection reset")
				for _, c := range cmds {
					c.SetErr(err)
				}
				return err
			}
		}
		return next(ctx, cmds)
	}
}

// A Finish the store did not take is sent again by the next Tick: the
// host's one slot (cap 1) is freed then, not held for the coordinator's
// life, and the job is counted done once.
func TestFinishRetried(t *testing.T) {
	client(t) // the cluster, or skip
	rdb := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: cluster.Addrs()})
	t.Cleanup(func() { rdb.Close() })
	var hook failFinish
	rdb.AddHook(&hook)
	l, err := newLedger(context.Background(), rdb, Config{Prefix: fmt.Sprintf("fin%d", prefixes.Add(1))})
	if err != nil {
		t.Fatal(err)
	}
	q := l.Jobs()
	q.HoldPoliteness(coord.SharedPolicy{
		Applies: func(string) bool { return true },
		Limits:  func(string) broker.Limits { return broker.Limits{PerHost: 1} },
	})
	for i := range 2 {
		if _, err := q.Push(time.Now(), politeJob("fetch", i)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := q.Claim(time.Now(), 10)
	if err != nil || len(got) != 1 {
		t.Fatalf("first claim: %d jobs, %v; want 1 (the host's cap)", len(got), err)
	}
	hook.armed.Store(true)
	q.Finish(time.Now(), items(got), nil)
	if hook.armed.Load() {
		t.Fatal("the finish did not meet the injected error")
	}
	if l.Err() == nil {
		t.Fatal("a finish the store did not take: no error; want one")
	}
	if again, _ := q.Claim(time.Now(), 10); len(again) != 0 {
		t.Fatalf("claimed %d jobs while the failed finish holds the slot; want 0", len(again))
	}
	l.Tick(time.Now())
	again, err := q.Claim(time.Now(), 10)
	if err != nil || len(again) != 1 {
		t.Fatalf("after the next Tick: claimed %d jobs, %v; want 1 (the finish sent again freed the slot)", len(again), err)
	}
	q.Finish(time.Now(), items(again), nil)
	done, err := rdb.Get(t.Context(), l.doneKey()).Int64()
	if err != nil || done != 2 {
		t.Fatalf("done total %d, %v; want 2 (each job counted once)", done, err)
	}
}

// A host's next time set far ahead (as by a master whose clock was ahead
// of the one that took over) holds its polite jobs at most an interval.
func TestClaimNextClampedToInterval(t *testing.T) {
	rdb := client(t)
	l := peers(t, rdb, 1, ledger.Config{})[0]
	q := l.Jobs()
	const gap = 200 * time.Millisecond
	q.HoldPoliteness(coord.SharedPolicy{
		Applies: func(string) bool { return true },
		Limits:  func(string) broker.Limits { return broker.Limits{PerHost: 1, MinDelay: gap} },
	})
	job := politeJob("fetch", 0)
	if _, err := q.Push(time.Now(), job); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	pol := l.pre(job.Host) + "pol"
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	ahead := now.Add(time.Hour).UnixMicro()
	if err := rdb.HSet(ctx, pol, "n", 0, "next", ahead, "g", 0).Err(); err != nil {
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
	deadline := time.Now().Add(30 * time.Second)
	for len(got) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no claim of the host's job within 30s of an interval of %v", gap)
		}
		time.Sleep(50 * time.Millisecond) // polling the server's clock
		if got, err = q.Claim(time.Now(), 10); err != nil {
			t.Fatal(err)
		}
	}
}

// loseClaim is a hook that, once armed, lets the next pipeline carrying a
// claim script reach Redis and run there, then loses its answers, as a
// connection cut after the request or a client timeout would.
type loseClaim struct{ armed atomic.Bool }

func (f *loseClaim) DialHook(next goredis.DialHook) goredis.DialHook          { return next }
func (f *loseClaim) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook { return next }
func (f *loseClaim) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		lose := false
		for _, c := range cmds {
			if slices.Contains(c.Args(), any("claim")) && f.armed.CompareAndSwap(true, false) {
				lose = true
			}
		}
		err := next(ctx, cmds)
		if lose {
			err = errors.New("injected: connection cut after the request")
			for _, c := range cmds {
				c.SetErr(err)
			}
		}
		return err
	}
}

// A claim whose answer is lost after Redis ran it leased a job this
// coordinator never saw, and took the host's slot: the next Tick frees it
// (back to the queue, the slot free for another coordinator), long before
// a sweep would (the heartbeat is a minute), and keeps the job the
// coordinator does hold.
func TestLostClaimFreed(t *testing.T) {
	client(t) // the cluster, or skip
	hooked := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: cluster.Addrs()})
	t.Cleanup(func() { hooked.Close() })
	var hook loseClaim
	hooked.AddHook(&hook)
	prefix := fmt.Sprintf("lost%d", prefixes.Add(1))
	var ls []*Ledger
	for _, rdb := range []goredis.UniversalClient{hooked, client(t)} {
		l, err := newLedger(context.Background(), rdb, Config{Prefix: prefix, Heartbeat: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.halt() })
		ls = append(ls, l)
	}
	a, b := ls[0].Jobs(), ls[1].Jobs()
	policy := coord.SharedPolicy{
		Applies: func(string) bool { return true },
		Limits:  func(string) broker.Limits { return broker.Limits{PerHost: 2} },
	}
	a.HoldPoliteness(policy)
	b.HoldPoliteness(policy)
	for i := range 3 {
		if _, err := a.Push(time.Now(), politeJob("fetch", i)); err != nil {
			t.Fatal(err)
		}
	}
	mine, err := a.Claim(time.Now(), 1)
	if err != nil || len(mine) != 1 {
		t.Fatalf("first claim: %d jobs, %v; want 1", len(mine), err)
	}
	hook.armed.Store(true)
	if got, err := a.Claim(time.Now(), 1); err == nil || len(got) != 0 {
		t.Fatalf("a claim whose answer was lost: %d jobs, %v; want none and an error", len(got), err)
	}
	if hook.armed.Load() {
		t.Fatal("the claim did not meet the injected cut")
	}
	if _, leased := queueStats(t, a); leased != 2 {
		t.Fatalf("%d jobs leased after the lost claim; want 2 (the script ran)", leased)
	}
	if got, _ := b.Claim(time.Now(), 10); len(got) != 0 {
		t.Fatalf("b claimed %d jobs while the host's 2 slots are leased; want 0", len(got))
	}
	ls[0].Tick(time.Now())
	got, err := b.Claim(time.Now(), 10)
	if err != nil || len(got) != 1 {
		t.Fatalf("after a's Tick, b claimed %d jobs, %v; want 1 (the lost claim's slot free)", len(got), err)
	}
	if a.Unclaimed != 1 {
		t.Fatalf("a's Tick returned %d jobs of the lost claim; want 1", a.Unclaimed)
	}
	if got[0].FP == mine[0].FP {
		t.Fatalf("b claimed the job a holds")
	}
	if queued, leased := queueStats(t, a); queued != 1 || leased != 2 {
		t.Fatalf("queued %d, leased %d; want 1 and 2 (a's own job kept)", queued, leased)
	}
	// a's own job ends its lease as before.
	a.Finish(time.Now(), items(mine), nil)
	if _, leased := queueStats(t, a); leased != 1 {
		t.Fatalf("leased %d after a finished its job; want 1 (b's)", leased)
	}
}

// Jobs naming a back-off key other than their URLs' hosts share that
// host's politeness, as in the broker: with a cap of 1, two jobs whose
// URLs are on two hosts but which name one are claimed one at a time, and
// the first's end frees the slot for the second.
func TestPolitenessByBackoffKey(t *testing.T) {
	rdb := client(t)
	l := peers(t, rdb, 1, ledger.Config{})[0]
	q := l.Jobs()
	q.HoldPoliteness(coord.SharedPolicy{
		Applies: func(string) bool { return true },
		Limits:  func(string) broker.Limits { return broker.Limits{PerHost: 1} },
	})
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
	if n, err := rdb.HGet(t.Context(), l.pre("group.example")+"pol", "n").Int(); err != nil || n != 1 {
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

// A back-off one coordinator's throttle set holds the host for the
// others: their claims take none of its jobs until its end and tell them
// of it (level included), a coordinator holding jobs of the host learns it
// at its next Tick, and after the end the jobs are claimed again.
func TestBackoffAcrossCoordinators(t *testing.T) {
	rdb := client(t)
	ls := peers(t, rdb, 2, ledger.Config{})
	a, b := ls[0].Jobs(), ls[1].Jobs()
	for i := range 4 {
		if _, err := a.Push(time.Now(), politeJob("fetch", i)); err != nil {
			t.Fatal(err)
		}
	}
	held, err := b.Claim(time.Now(), 1)
	if err != nil || len(held) != 1 {
		t.Fatalf("b's first claim: %d jobs, %v; want 1", len(held), err)
	}
	host := held[0].Host
	const d = 3 * time.Second
	start := time.Now()
	a.BackOff(start, []broker.HostBackoff{{Host: host, Until: start.Add(d), Level: 2, Forgiven: start.Add(time.Minute)}})
	if err := ls[0].Err(); err != nil {
		t.Fatal(err)
	}
	// b holds a job of the host: its next Tick learns of the back-off.
	ls[1].Tick(time.Now())
	learned := b.Backoffs(nil)
	if len(learned) != 1 || learned[0].Host != host || learned[0].Level != 2 {
		t.Fatalf("b learned %+v at its Tick; want %s's back-off at level 2", learned, host)
	}
	if end := learned[0].Until; end.Before(start.Add(d-time.Second)) || end.After(time.Now().Add(d)) {
		t.Fatalf("b learned an end %v after the back-off was set; want about %v", end.Sub(start), d)
	}
	got, err := b.Claim(time.Now(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) < d && len(got) != 0 {
		t.Fatalf("b claimed %d jobs of the host in back-off; want 0", len(got))
	}
	if again := b.Backoffs(nil); len(got) == 0 && len(again) != 1 {
		t.Fatalf("b's claim in the back-off told of %d back-offs; want 1", len(again))
	}
	if own, _ := a.Claim(time.Now(), 10); time.Since(start) < d && len(own) != 0 {
		t.Fatalf("a claimed %d jobs of the host it backed off; want 0", len(own))
	}
	if mine := a.Backoffs(nil); len(mine) != 0 {
		t.Fatalf("a learned its own back-off back: %+v; want nothing", mine)
	}
	deadline := time.Now().Add(time.Minute)
	for len(got) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no job of the host claimed within a minute of a 3s back-off")
		}
		time.Sleep(100 * time.Millisecond) // polling the server's clock
		if got, err = b.Claim(time.Now(), 10); err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(start); took < d {
		t.Fatalf("the host's jobs were claimed %v after a back-off of %v; want at least that", took, d)
	}
}

// The cluster view lists the hosts holding polite jobs back in the shared
// queue, as any live coordinator's claims found them: b's claim finds the
// host at its cap (a holds its one slot), and a's view shows it with its
// waiting jobs, the slot in use and the limits.
func TestClusterViewPoliteHosts(t *testing.T) {
	rdb := client(t)
	ls := peers(t, rdb, 2, ledger.Config{})
	a, b := ls[0].Jobs(), ls[1].Jobs()
	policy := coord.SharedPolicy{
		Applies: func(string) bool { return true },
		Limits:  func(string) broker.Limits { return broker.Limits{PerHost: 1, MinDelay: time.Minute} },
	}
	a.HoldPoliteness(policy)
	b.HoldPoliteness(policy)
	for i := range 3 {
		if _, err := a.Push(time.Now(), politeJob("fetch", i)); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := a.Claim(time.Now(), 10); err != nil || len(got) != 1 {
		t.Fatalf("a claimed %d jobs, %v; want 1", len(got), err)
	}
	if got, err := b.Claim(time.Now(), 10); err != nil || len(got) != 0 {
		t.Fatalf("b claimed %d jobs, %v; want 0 (the host at its cap)", len(got), err)
	}
	ctx := t.Context()
	for _, l := range ls {
		if err := l.PublishSummary(ctx, admin.ClusterCoordinator{Heartbeat: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	v, err := ls[0].ClusterView(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	host := politeJob("fetch", 0).Host
	want := admin.HostRow{Host: host, Jobs: 2, Polite: true, InFlight: 1, Limit: "1 at once, 1 per 1m0s"}
	if len(v.PoliteHosts) != 1 || v.PoliteHosts[0] != want {
		t.Fatalf("the cluster view's polite hosts: %+v; want [%+v] (found by b's claim)", v.PoliteHosts, want)
	}
}
