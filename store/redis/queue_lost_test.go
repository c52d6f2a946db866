package redis

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"drover/coord/broker"
)

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
	var hook failFinish
	l, _ := hookedLedger(t, &hook)
	q := l.Jobs()
	q.HoldPoliteness(politeAll(broker.Limits{PerHost: 1}))
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
	if tot := totals(t, l); tot.Done != 2 {
		t.Fatalf("done total %d; want 2 (each job counted once)", tot.Done)
	}
}

// loseReply is a hook that, once armed, lets the next pipeline carrying a
// script of operation op reach Redis and run there, then loses its
// answers, as a connection cut after the request or a client timeout
// would.
type loseReply struct {
	op    string
	armed atomic.Bool
}

// loseClaim loses the answers of the next claim once armed.
func loseClaim() *loseReply { return &loseReply{op: "claim"} }

func (f *loseReply) DialHook(next goredis.DialHook) goredis.DialHook          { return next }
func (f *loseReply) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook { return next }
func (f *loseReply) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		lose := false
		for _, c := range cmds {
			if slices.Contains(c.Args(), any(f.op)) && f.armed.CompareAndSwap(true, false) {
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

// claimPair starts two coordinators' queues on a new prefix named after
// name: a on rdb (the client whose fault a test injects), b on a plain
// one, both holding politeness at 2 fetches per host; a pushes three jobs
// of one host and claims one (mine).
func claimPair(t *testing.T, rdb goredis.UniversalClient, name string) (la *Ledger, a, b *Queue, mine []broker.Spec) {
	t.Helper()
	prefix := fmt.Sprintf("%s%d", name, prefixes.Add(1))
	var ls []*Ledger
	for _, c := range []goredis.UniversalClient{rdb, client(t)} {
		l, err := newLedger(context.Background(), c, Config{Prefix: prefix, Heartbeat: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.halt() })
		ls = append(ls, l)
	}
	a, b = ls[0].Jobs(), ls[1].Jobs()
	policy := politeAll(broker.Limits{PerHost: 2})
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
	return ls[0], a, b, mine
}

// A claim whose answer is lost after Redis ran it leased a job this
// coordinator never saw, and took the host's slot: the next Tick frees it
// (back to the queue, the slot free for another coordinator), long before
// a sweep would (the heartbeat is a minute), and keeps the job the
// coordinator does hold.
func TestLostClaimFreed(t *testing.T) {
	hook := loseClaim()
	la, a, b, mine := claimPair(t, hookedClient(t, hook), "lost")
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
	la.Tick(time.Now())
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

// failIDs is a hook that, once armed, fails the next command taking a
// block of job ids.
type failIDs struct{ armed atomic.Bool }

func (f *failIDs) DialHook(next goredis.DialHook) goredis.DialHook { return next }
func (f *failIDs) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if a := cmd.Args(); cmd.Name() == "incrby" && len(a) > 1 && strings.HasSuffix(fmt.Sprint(a[1]), ":jobids") && f.armed.CompareAndSwap(true, false) {
			err := errors.New("injected: connection reset")
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}
func (f *failIDs) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}

// A batch whose job ids run out mid-way, the next block not taken, gives
// no job an id without its being in the queue: the caller takes an id
// for "the queue has it", and would drop the job.
func TestPushBatchIDsFail(t *testing.T) {
	var hook failIDs
	l, _ := hookedLedger(t, &hook)
	q := l.Jobs()
	if _, err := q.Push(time.Now(), jobSpec(0)); err != nil {
		t.Fatal(err)
	}
	q.nextID = q.lastID - 1 // two ids left in the block
	hook.armed.Store(true)
	ids, err := q.PushBatch(time.Now(), []broker.Spec{jobSpec(1), jobSpec(2), jobSpec(3), jobSpec(4)})
	if hook.armed.Load() {
		t.Fatal("the batch did not take a block of ids")
	}
	if err == nil {
		t.Fatal("a batch whose ids could not be taken: no error; want one")
	}
	given := 0
	for _, j := range ids {
		if j != 0 {
			given++
		}
	}
	queued := 0
	for i := range 5 { // five hosts, a job on each
		n, err := l.rdb.LLen(t.Context(), l.pre(jobSpec(i).Host)+"jq").Result()
		if err != nil {
			t.Fatal(err)
		}
		queued += int(n)
	}
	if queued != 1+given {
		t.Fatalf("%d jobs queued, %d of the batch given ids; want every job given an id queued (and the first push's)", queued, given)
	}
}

// cutReply is a dialer whose connections, once it is armed, let the next
// request carrying marker (a claim script's when nil) reach Redis and its
// reply come back, then read the reply and end the connection (io.EOF):
// the call ran, its answer was lost below the client, which may send it
// again.
type cutReply struct {
	marker []byte
	armed  atomic.Bool
}

func (c *cutReply) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &cutConn{Conn: conn, cut: c}, nil
}

type cutConn struct {
	net.Conn
	cut    *cutReply
	doomed atomic.Bool
}

func (c *cutConn) Write(b []byte) (int, error) {
	m := c.cut.marker
	if m == nil {
		m = []byte("claim")
	}
	if bytes.Contains(b, m) && c.cut.armed.CompareAndSwap(true, false) {
		c.doomed.Store(true)
	}
	return c.Conn.Write(b)
}

func (c *cutConn) Read(b []byte) (int, error) {
	if c.doomed.Load() {
		c.Conn.Read(make([]byte, 64<<10)) // the reply: the script ran
		c.Conn.Close()
		return 0, io.EOF
	}
	return c.Conn.Read(b)
}

// A claim whose reply is cut on the connection after Redis ran it is not
// run again by the client (which would lease more jobs and leave the
// first run's leased to no one, a polite slot with them): the claim
// fails, and the next Tick frees what it leased, for the other
// coordinators.
func TestClaimNotResentAfterCutReply(t *testing.T) {
	client(t) // the cluster, or skip
	var cut cutReply
	cutting := newClusterClient(&goredis.ClusterOptions{Addrs: cluster.Addrs(), Dialer: cut.dial})
	t.Cleanup(func() { cutting.Close() })
	la, a, b, _ := claimPair(t, cutting, "cut")
	cut.armed.Store(true)
	got, err := a.Claim(time.Now(), 1)
	if cut.armed.Load() {
		t.Fatal("the claim did not meet the cut")
	}
	if err == nil || len(got) != 0 {
		t.Fatalf("a claim whose reply was cut: %d jobs, %v; want none and an error", len(got), err)
	}
	la.Tick(time.Now())
	if got, err := b.Claim(time.Now(), 10); err != nil || len(got) != 1 {
		t.Fatalf("after a's Tick, b claimed %d jobs, %v; want 1 (the slot the cut claim took, free)", len(got), err)
	}
	if _, leased := queueStats(t, a); leased != 2 {
		t.Fatalf("%d jobs leased; want 2 (a's own and b's)", leased)
	}
}
