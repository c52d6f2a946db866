package coord

import (
	"fmt"
	"slices"
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

// returnQueue is a memQueue that takes back jobs (SharedReturn), as they
// were pushed, at the front, as the Redis queue does.
type returnQueue struct {
	memQueue
	claimed map[id.Fingerprint]broker.Spec
	back    []broker.HandedBack
}

func (q *returnQueue) Claim(now time.Time, n int) ([]broker.Spec, error) {
	out, err := q.memQueue.Claim(now, n)
	if q.claimed == nil {
		q.claimed = make(map[id.Fingerprint]broker.Spec)
	}
	for _, sp := range out {
		q.claimed[sp.FP] = sp
	}
	return out, err
}

func (q *returnQueue) Return(now time.Time, jobs []broker.HandedBack) {
	q.back = append(q.back, jobs...)
	front := make([]broker.Spec, 0, len(jobs)+len(q.jobs))
	for _, j := range jobs {
		sp, ok := q.claimed[j.FP]
		if !ok || sp.Key != j.Key {
			panic(fmt.Sprintf("returned job %+v was not claimed", j))
		}
		delete(q.claimed, j.FP)
		front = append(front, sp)
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

// A coordinator on a shared queue whose workers lack the headers some
// claimed jobs need returns those at once, marked Unroutable, and keeps
// the others; when its only worker with the headers is evicted, the jobs
// that waited for it go back too.
func TestSharedHandBackUnroutable(t *testing.T) {
	mem, err := ledger.New(ledger.Config{})
	if err != nil {
		t.Fatal(err)
	}
	q := &returnQueue{}
	gpu := map[string]string{"hw": "gpu"}
	for i := range 6 {
		k := id.Key{Crawler: "c", Processor: "p", URL: fmt.Sprintf("http://a.test/%d", i)}
		sp := broker.Spec{Key: k, FP: k.Fingerprint(), Host: "a.test"}
		if i < 2 {
			sp.Headers = gpu
		}
		q.jobs = append(q.jobs, sp)
	}
	c := newCoord(t, Config{Backend: backendOnly{mem}, Shared: q})
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := c.Hello(t0, 1, Hello{Role: RoleWorker, ID: "plain", Slots: 4}); err != nil {
		t.Fatal(err)
	}
	c.Tick(t0)
	if len(q.back) != 2 || !q.back[0].Unroutable || q.back[0].Ran || q.back[1].Key.URL != "http://a.test/1" {
		t.Fatalf("handed back %+v; want the 2 gpu jobs at once, unroutable, not run", q.back)
	}
	if c.brk.Count(broker.Queued) != 2 || c.brk.Count(broker.Queued)+len(q.jobs) != 6 {
		t.Fatalf("%d queued here, %d in the shared queue; want 2 plain ones claimed and the gpu ones back in the queue", c.brk.Count(broker.Queued), len(q.jobs))
	}
	var tt admin.Totals
	c.brk.Totals(&tt)
	if tt.Unroutable != 0 {
		t.Fatalf("%d jobs unroutable here; want none", tt.Unroutable)
	}
	// A worker with the headers connects: its jobs are claimed and kept;
	// it is evicted while one waits: that one goes back, the plain stay.
	// (Ticks well within the workers' liveness.)
	now := t0.Add(100 * time.Millisecond)
	if _, err := c.Hello(now, 2, Hello{Role: RoleWorker, ID: "gpu", Slots: 1, Headers: gpu}); err != nil {
		t.Fatal(err)
	}
	q.back = nil
	for range 3 {
		now = now.Add(sharedPoll)
		c.Tick(now)
	}
	if len(q.back) != 0 || c.brk.Count(broker.Queued) != 5 || len(q.jobs) != 1 {
		t.Fatalf("with a gpu worker: %d handed back, %d queued here, %d in the shared queue; want none back, 5 here (the free slots), 1 left", len(q.back), c.brk.Count(broker.Queued), len(q.jobs))
	}
	if res, err := c.Act(now, admin.Action{Kind: admin.ActEvict, Targets: []string{"gpu"}}); err != nil || res.Affected != 1 {
		t.Fatalf("evict gpu: %+v, %v", res, err)
	}
	now = now.Add(sharedPoll)
	c.Tick(now)
	// (This queue does not leave the host to others after an unroutable
	// job as the Redis one does: the same Tick's claim may take a gpu job
	// again, and returns it at once.)
	if len(q.back) < 2 || q.back[0].Key.URL != "http://a.test/0" || q.back[1].Key.URL != "http://a.test/1" ||
		slices.ContainsFunc(q.back, func(h broker.HandedBack) bool { return !h.Unroutable || h.Key.URL > "http://a.test/1" }) ||
		c.brk.Count(broker.Queued) != 3 || len(q.jobs) != 3 {
		t.Fatalf("after gpu's eviction: handed back %+v, %d queued here, %d in the shared queue; want the 2 gpu jobs back (only they), 3 plain ones here, 3 there", q.back, c.brk.Count(broker.Queued), len(q.jobs))
	}
}

// budgetReturnQueue is a budgetQueue that takes jobs back.
type budgetReturnQueue struct {
	budgetQueue
	back []broker.HandedBack
}

func (q *budgetReturnQueue) Return(now time.Time, jobs []broker.HandedBack) {
	q.back = append(q.back, jobs...)
}

// Handed back, a crawl's job that ran here keeps its charge (its page may
// have been fetched); one that did not gives its page back, so the next
// claim charges it again; a job returned at its claim for want of headers
// was never charged.
func TestSharedHandBackRefundsJobsNotRun(t *testing.T) {
	mem, err := ledger.New(ledger.Config{})
	if err != nil {
		t.Fatal(err)
	}
	q := &budgetReturnQueue{budgetQueue: budgetQueue{max: 10, charged: map[id.Fingerprint]bool{}}}
	for i := range 4 {
		k := id.Key{Crawler: "c", Processor: "p", URL: fmt.Sprintf("http://a.test/%d", i)}
		sp := broker.Spec{Key: k, FP: k.Fingerprint(), Host: "a.test"}
		if i == 3 {
			sp.Headers = map[string]string{"hw": "gpu"}
		}
		q.jobs = append(q.jobs, sp)
	}
	c := newCoord(t, Config{Backend: backendOnly{mem}, Shared: q})
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := c.Hello(t0, 1, Hello{Role: RoleWorker, ID: "w", Slots: 4}); err != nil {
		t.Fatal(err)
	}
	c.Tick(t0)
	if len(q.back) != 1 || q.back[0].Key.URL != "http://a.test/3" || len(q.charged) != 3 || len(q.refunded) != 0 {
		t.Fatalf("after the claim: back %+v, %d charged, %d refunded; want the gpu job back uncharged, 3 charged", q.back, len(q.charged), len(q.refunded))
	}
	c.Ready(t0)
	if n := c.brk.Count(broker.Dispatched); n != 3 {
		t.Fatalf("%d dispatched; want the 3 charged jobs", n)
	}
	// A job charged at its claim waits with them: none of the 4 runs,
	// w is evicted, and all 4 go back.
	k := id.Key{Crawler: "c", Processor: "p", URL: "http://a.test/9"}
	c.brk.Submit(t0, broker.Spec{Key: k, FP: k.Fingerprint(), Host: "a.test"})
	q.charged[k.Fingerprint()] = true // as at its claim
	if _, err := c.Act(t0, admin.Action{Kind: admin.ActEvict, Targets: []string{"w"}}); err != nil {
		t.Fatal(err)
	}
	q.back = nil
	c.Tick(t0.Add(sharedPoll))
	ran := 0
	for _, h := range q.back {
		if h.Ran {
			ran++
		}
	}
	if len(q.back) != 4 || ran != 3 {
		t.Fatalf("handed back %+v; want the 3 that ran and the one that did not", q.back)
	}
	if len(q.refunded) != 1 || q.refunded[0] != k.Fingerprint() || len(q.charged) != 3 {
		t.Fatalf("refunded %v, %d still charged; want only the job that did not run refunded, the 3 that ran charged", q.refunded, len(q.charged))
	}
}
