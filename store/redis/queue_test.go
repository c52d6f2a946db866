package redis

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

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
	awaitSwept(t, ls[0])
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
	var rt roundTrips
	l, _ := hookedLedger(t, &rt)
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
	// SRANDMEMBER, the hosts' registration, the scripts (which count
	// the jobs out of the queue): 3 (a host picked with fewer jobs than
	// its share adds a round).
	if trips > 3+claimRounds-1 {
		t.Fatalf("a claim of 64 jobs over 10 hosts took %d round trips; want at most %d (the hosts' scripts pipelined)", trips, 3+claimRounds-1)
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
	ready, err := l.rdb.SMembers(ctx, l.readyKey()).Result() // pushed to, not yet claimed from
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range ready {
		if !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
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

// hookedClient is a cluster client of t's own with hook added, for tests
// that count or break what a coordinator sends (the cluster, or skip).
func hookedClient(t *testing.T, hook goredis.Hook) *goredis.ClusterClient {
	t.Helper()
	client(t) // the cluster, or skip
	rdb := newClusterClient(&goredis.ClusterOptions{Addrs: cluster.Addrs()})
	t.Cleanup(func() { rdb.Close() })
	rdb.AddHook(hook)
	return rdb
}

// hookedLedger is a coordinator alone (no heartbeat, so it sends only
// what the test makes it) on a hookedClient.
func hookedLedger(t *testing.T, hook goredis.Hook) (*Ledger, *goredis.ClusterClient) {
	t.Helper()
	rdb := hookedClient(t, hook)
	l, err := newTestLedger(t, rdb, ledger.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return l, rdb
}

// politeAll is a policy under which every processor's jobs are polite,
// with limits lim on every host.
func politeAll(lim broker.Limits) coord.SharedPolicy {
	return coord.SharedPolicy{Applies: func(string) bool { return true }, Limits: func(string) broker.Limits { return lim }}
}

// politeQueue is one coordinator's shared queue, every job polite with
// limits lim.
func politeQueue(t *testing.T, lim broker.Limits) (*Ledger, *Queue) {
	t.Helper()
	l := peers(t, client(t), 1, ledger.Config{})[0]
	q := l.Jobs()
	q.HoldPoliteness(politeAll(lim))
	return l, q
}

// awaitSwept runs l's maintenance until it has swept a dead peer, whose
// heartbeat's TTL Redis ends (a minute at most).
func awaitSwept(t *testing.T, l *Ledger) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for l.Swept == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the dead peer was not swept within a minute (alive TTL 3s)")
		}
		l.Maintain(time.Now())
		time.Sleep(200 * time.Millisecond) // polling the sweep, whose TTL is Redis's
	}
}

// claimSome polls q until a claim of up to n takes at least one job (the
// host's interval or back-off ends on the server's clock), within a
// minute, and returns what it took.
func claimSome(t *testing.T, q *Queue, n int) []broker.Spec {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got, err := q.Claim(time.Now(), n)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > 0 {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("no job claimed within a minute")
		}
		time.Sleep(50 * time.Millisecond) // polling the server's clock
	}
}
