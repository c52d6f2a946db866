package coord

import (
	"fmt"
	"testing"
	"time"

	"drover/coord/broker"
	"drover/coord/id"
	"drover/coord/ledger"
)

// politeQueue is a memQueue that holds politeness: it reports a host
// waiting for its interval after each claim.
type politeQueue struct {
	memQueue
	policy SharedPolicy
	wait   time.Duration
}

func (q *politeQueue) HoldPoliteness(p SharedPolicy) { q.policy = p }
func (q *politeQueue) PoliteWait() time.Duration     { return q.wait }

// New hands a shared queue that holds politeness the broker's policy, and
// a claim that found a host waiting for its interval comes back when the
// host is due rather than at the next poll.
func TestSharedPoliteness(t *testing.T) {
	mem, err := ledger.New(ledger.Config{})
	if err != nil {
		t.Fatal(err)
	}
	q := &politeQueue{wait: 30 * time.Millisecond}
	pol := broker.Politeness{Default: broker.Limits{PerHost: 2, MinDelay: time.Second}, Processor: "fetch"}
	c := newCoord(t, Config{Backend: backendOnly{mem}, Shared: q, Broker: broker.Config{Politeness: pol}})
	if q.policy.Applies == nil || q.policy.Limits == nil {
		t.Fatalf("New did not hand the queue the broker's policy")
	}
	if !q.policy.Applies("fetch") || q.policy.Applies("exec") {
		t.Fatalf("the policy applies to fetch %v, exec %v; want fetch only", q.policy.Applies("fetch"), q.policy.Applies("exec"))
	}
	if l := q.policy.Limits("example.com"); l != pol.Default {
		t.Fatalf("the policy's limits for example.com: %+v; want the default %+v", l, pol.Default)
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := c.Hello(t0, 1, Hello{Role: RoleWorker, ID: "w", Slots: 8}); err != nil {
		t.Fatal(err)
	}
	c.Tick(t0)
	if d, ok := c.NextDeadline(); !ok || !d.Equal(t0.Add(q.wait)) {
		t.Fatalf("after a claim that found a host due in %v: next deadline %v (%v); want %v", q.wait, d, ok, t0.Add(q.wait))
	}
	q.wait = 0
	c.Tick(t0.Add(q.wait + time.Second))
	if d, ok := c.NextDeadline(); !ok || !d.Equal(t0.Add(time.Second+sharedPoll)) {
		t.Fatalf("after a claim that found no host waiting: next deadline %v (%v); want the poll, %v", d, ok, t0.Add(time.Second+sharedPoll))
	}
}

// A coordinator claims from the shared queue no more jobs than its ready
// workers have free slots: none without a worker (they would wait here,
// unroutable, while other coordinators' workers sit idle), as many as
// the slots once one connects, and none while they are all busy.
func TestSharedClaimsForFreeSlots(t *testing.T) {
	mem, err := ledger.New(ledger.Config{})
	if err != nil {
		t.Fatal(err)
	}
	q := &memQueue{}
	for i := range 10 {
		k := id.Key{Crawler: "c", Processor: "p", URL: fmt.Sprintf("http://a.test/%d", i)}
		q.jobs = append(q.jobs, broker.Spec{Key: k, FP: k.Fingerprint(), Host: "a.test"})
	}
	c := newCoord(t, Config{Backend: backendOnly{mem}, Shared: q})
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c.Tick(t0)
	if len(q.jobs) != 10 || c.brk.Count(broker.Queued) != 0 {
		t.Fatalf("with no worker: %d jobs left in the shared queue, %d queued here; want 10 and 0", len(q.jobs), c.brk.Count(broker.Queued))
	}
	if _, err := c.Hello(t0, 1, Hello{Role: RoleWorker, ID: "w", Slots: 3}); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(time.Second)
	c.Tick(now)
	if len(q.jobs) != 7 {
		t.Fatalf("with a worker of 3 free slots: %d jobs left in the shared queue; want 7", len(q.jobs))
	}
	c.Ready(now) // dispatches the three
	now = now.Add(time.Second)
	c.Tick(now)
	if len(q.jobs) != 7 {
		t.Fatalf("with every slot busy: %d jobs left in the shared queue; want 7 (nothing claimed)", len(q.jobs))
	}
}
