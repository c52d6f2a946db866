package coord

import (
	"testing"
	"time"

	"drover/coord/broker"
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
