package coord

import (
	"fmt"
	"testing"
	"time"

	"drover/admin"
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

// budgetQueue is a memQueue holding one crawl's page budget as the
// cluster does: charged at a claim, once per key, refunds and failed
// counts taken back recorded.
type budgetQueue struct {
	memQueue
	max      int
	charged  map[id.Fingerprint]bool
	refunded []id.Fingerprint
	unfailed int
}

func (q *budgetQueue) Charge(now time.Time, specs []broker.Spec) ([]int, error) {
	out := make([]int, len(specs))
	for i, sp := range specs {
		switch {
		case q.charged[sp.FP]:
		case len(q.charged) < q.max:
			q.charged[sp.FP] = true
		default:
			out[i] = q.max
		}
	}
	return out, nil
}

func (q *budgetQueue) Refund(now time.Time, items []ledger.Item) {
	for _, it := range items {
		if q.charged[it.FP] {
			delete(q.charged, it.FP)
			q.refunded = append(q.refunded, it.FP)
		}
	}
}

func (q *budgetQueue) Unfail(now time.Time, items []ledger.Item) { q.unfailed += len(items) }

// A crawl's budget on a shared queue counts the pages fetched, as the
// embedded broker's: a job charged at its claim that ends without a
// dispatch (cancelled) gives its page back; a failed job requeued is
// charged first, refused while the budget is spent (it ran uncharged, a
// page past the budget), and taken out of the failed count when it is
// requeued.
func TestSharedBudgetRefundsAndRequeues(t *testing.T) {
	mem, err := ledger.New(ledger.Config{})
	if err != nil {
		t.Fatal(err)
	}
	q := &budgetQueue{max: 1, charged: make(map[id.Fingerprint]bool)}
	for i := range 3 {
		k := id.Key{Crawler: "c", Processor: "p", URL: fmt.Sprintf("http://a.test/%d", i)}
		q.jobs = append(q.jobs, broker.Spec{Key: k, FP: k.Fingerprint(), Host: "a.test"})
	}
	c := newCoord(t, Config{Backend: backendOnly{mem}, Shared: q})
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := c.Hello(t0, 1, Hello{Role: RoleWorker, ID: "w", Slots: 3}); err != nil {
		t.Fatal(err)
	}
	// Claimed and charged (one), refused (two), then the crawl is
	// cancelled before the charged one is dispatched: its page comes back.
	c.Tick(t0)
	if len(q.charged) != 1 {
		t.Fatalf("%d jobs charged at the claim; want 1 (the budget)", len(q.charged))
	}
	c.SetCrawlState(t0, "c", broker.CrawlCancelled)
	c.Ready(t0)
	if len(q.refunded) != 1 || len(q.charged) != 0 {
		t.Fatalf("refunded %d pages, %d still charged; want the cancelled job's page back", len(q.refunded), len(q.charged))
	}
	c.SetCrawlState(t0, "c", broker.CrawlRunning)
	// Requeued, the three failed jobs are charged first: one may run, the
	// other two are refused (they stay failed).
	res, err := c.Act(t0, admin.Action{Kind: admin.ActRequeueFailed})
	if err != nil {
		t.Fatal(err)
	}
	if res.Affected != 1 || len(res.Errors) != 2 || len(q.charged) != 1 || q.unfailed != 1 {
		t.Fatalf("requeue-failed: %d requeued, errors %v, %d charged, %d taken out of the failed count; want 1, 2 refused (budget), 1, 1", res.Affected, res.Errors, len(q.charged), q.unfailed)
	}
}

// returnQueue is a memQueue that takes back jobs (SharedReturn), at the
// front, as the Redis queue does.
type returnQueue struct {
	memQueue
	back []broker.HandedBack
}

func (q *returnQueue) Return(now time.Time, jobs []broker.HandedBack) {
	q.back = append(q.back, jobs...)
	front := make([]broker.Spec, 0, len(jobs)+len(q.jobs))
	for _, j := range jobs {
		front = append(front, broker.Spec{Key: j.Key, FP: j.FP, Host: id.Host(j.Key.URL)})
	}
	q.jobs = append(front, q.jobs...)
}

// A coordinator on a shared queue whose last worker is evicted hands the
// jobs it claimed (the worker's, requeued, and those still waiting) back
// to the queue at its next claim, none finished; one whose worker is
// only busy keeps them.
func TestSharedHandBackWithoutWorkers(t *testing.T) {
	mem, err := ledger.New(ledger.Config{})
	if err != nil {
		t.Fatal(err)
	}
	q := &returnQueue{}
	for i := range 10 {
		k := id.Key{Crawler: "c", Processor: "p", URL: fmt.Sprintf("http://a.test/%d", i)}
		q.jobs = append(q.jobs, broker.Spec{Key: k, FP: k.Fingerprint(), Host: "a.test"})
	}
	c := newCoord(t, Config{Backend: backendOnly{mem}, Shared: q, SharedWindow: 4})
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := c.Hello(t0, 1, Hello{Role: RoleWorker, ID: "w", Slots: 2}); err != nil {
		t.Fatal(err)
	}
	now := t0
	c.Tick(now)
	c.Ready(now) // dispatches two
	if c.brk.Count(broker.Dispatched) != 2 || len(q.jobs) != 8 {
		t.Fatalf("dispatched %d, %d left in the shared queue; want 2 and 8", c.brk.Count(broker.Dispatched), len(q.jobs))
	}
	// Busy, not gone: nothing goes back.
	now = now.Add(time.Second)
	c.Tick(now)
	if len(q.back) != 0 {
		t.Fatalf("handed back %d jobs while the worker is busy", len(q.back))
	}
	res, err := c.Act(now, admin.Action{Kind: admin.ActEvict, Targets: []string{"w"}})
	if err != nil || res.Affected != 1 {
		t.Fatalf("evict w: %+v, %v", res, err)
	}
	now = now.Add(time.Second)
	c.Tick(now)
	if len(q.back) != 2 || !q.back[0].Ran || !q.back[1].Ran {
		t.Fatalf("handed back %+v; want the evicted worker's 2 jobs, both run", q.back)
	}
	if len(q.jobs) != 10 || c.brk.Count(broker.Queued) != 0 || c.brk.Count(broker.Dispatched) != 0 {
		t.Fatalf("%d jobs in the shared queue, %d queued and %d dispatched here; want 10, 0, 0", len(q.jobs), c.brk.Count(broker.Queued), c.brk.Count(broker.Dispatched))
	}
	if fin := c.brk.TakeFinished(nil); len(fin) != 0 {
		t.Fatalf("the hand-back finished %d jobs", len(fin))
	}
	if claimed, returned, _ := c.SharedStats(); claimed != 2 || returned != 2 {
		t.Fatalf("shared stats: %d claimed, %d returned; want 2 and 2", claimed, returned)
	}
	// A worker connecting again claims them again.
	if _, err := c.Hello(now, 2, Hello{Role: RoleWorker, ID: "w2", Slots: 3}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	c.Tick(now)
	if len(q.jobs) != 7 || c.brk.Count(broker.Queued) != 3 {
		t.Fatalf("with a new worker: %d left in the shared queue, %d queued here; want 7 and 3", len(q.jobs), c.brk.Count(broker.Queued))
	}
}
