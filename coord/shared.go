package coord

import (
	"time"

	"drover/coord/broker"
	"drover/coord/id"
	"drover/coord/ledger"
)

// A job queue shared by several coordinators (Config.Shared; the Redis
// Cluster one is drover/store/redis.Queue). A job accepted here goes to
// the shared queue, not to this coordinator's broker; Tick claims jobs
// from it into the broker for the free slots of this coordinator's ready
// workers (at most Config.SharedWindow jobs waiting here), so a job submitted to one coordinator may run on another's workers. A
// claimed job is leased to this coordinator until it is done or failed
// (Finish); if the coordinator dies, the queue's keeper returns its leased
// jobs to the queue (uncharged) for the others to claim. Delivery is at
// least once: a job running when its coordinator died may run again.

// SharedQueue is a job queue shared with other coordinators. Its calls may
// do I/O (as a ledger.Backend's do); the core calls them from Submit,
// Tick and Ready only.
type SharedQueue interface {
	// Push hands over an accepted job and returns the id it has there
	// (≥ 1, for the producer's records). An error leaves the job with the
	// caller, which keeps it in its own broker.
	Push(now time.Time, spec broker.Spec) (uint64, error)
	// PushBatch is Push for several jobs at once, in one round trip where
	// it can: ids[i] is job i's id, 0 for a job the queue did not take.
	PushBatch(now time.Time, specs []broker.Spec) (ids []uint64, err error)
	// Claim takes up to n queued jobs, leased to this coordinator. An
	// error is a claim of none (tried again at the next poll).
	Claim(now time.Time, n int) ([]broker.Spec, error)
	// Finish ends the leases of claimed jobs done (ok) and failed for
	// good, and counts them in the cluster's totals; a job the queue does
	// not know is ignored (and counted: it ran here).
	Finish(now time.Time, ok, failed []ledger.Item)
}

// SharedPoliteness is implemented by a shared queue that holds the
// hosts' politeness for every coordinator sharing it (the Redis one: a
// claim takes a host's job only while the host is under its cap and past
// its interval across the cluster). New hands it this coordinator's
// policy once, before any other call. Without it, each coordinator's
// broker holds the limits among its own workers only.
type SharedPoliteness interface {
	HoldPoliteness(p SharedPolicy)
	// PoliteWait is how long after the last Claim a host it found
	// holding jobs back for its interval becomes eligible (0: it found
	// none): the next claim comes then if that is sooner than the poll.
	PoliteWait() time.Duration
}

// SharedBackoff is implemented by a shared queue that holds hosts'
// back-offs for every coordinator sharing it (the Redis one): a worker's
// 429 or 503 on one coordinator holds the host's jobs on all of them.
// The broker of the coordinator whose worker was throttled computes the
// back-off (its rules: Retry-After capped, else exponential from the
// host's level); the queue carries it to the others, whose brokers hold
// the host's jobs until its end and continue from its level
// (broker.Broker.HoldHost), and claims none of the host's jobs meanwhile.
type SharedBackoff interface {
	// BackOff hands over back-offs this coordinator's throttles started or
	// extended (broker.Broker.TakeBackoffs).
	BackOff(now time.Time, bos []broker.HostBackoff)
	// Backoffs appends to dst the back-offs other coordinators set that
	// the queue learned since the last call, on hosts this coordinator
	// holds or claims jobs of.
	Backoffs(dst []broker.HostBackoff) []broker.HostBackoff
}

// SharedBudgets is implemented by a shared queue that holds the crawls'
// page budgets for every coordinator sharing it (the Redis one): a job is
// charged to its crawl's budget when it is first claimed, on any
// coordinator, so a budget counts each page once across the cluster. A
// job charged that ends without being dispatched (cancelled, unroutable)
// gives its page back, and a failed job requeued here is charged again
// first (it may have failed as budget), so a budget of N fetches N pages
// as the embedded broker's does (counted at a job's first dispatch).
type SharedBudgets interface {
	// Charge charges claimed jobs to their crawls' budgets. refused[i] is
	// the budget of a job whose crawl has no page left for it, 0 for a
	// job that may run (charged now, charged at an earlier claim, or of a
	// crawl without a budget). A job refused fails at once as budget
	// (broker.Broker.Refuse). An error charges nothing and refuses none.
	Charge(now time.Time, specs []broker.Spec) (refused []int, err error)
	// Refund gives back the pages of jobs charged that ended without a
	// dispatch.
	Refund(now time.Time, items []ledger.Item)
}

// SharedCounts is implemented by a shared queue that counts the jobs
// finished for the cluster (the Redis one): a failed job requeued here
// is taken back out of the failed count (it is counted again when it
// ends).
type SharedCounts interface {
	Unfail(now time.Time, items []ledger.Item)
}

// SharedReturn is implemented by a shared queue that takes back jobs
// this coordinator claimed and cannot run (the Redis one). When the
// coordinator has no worker left that may take a job (the last one
// evicted, lost, drained or held back), Tick takes the jobs waiting in
// its broker out (broker.Broker.HandBack) and returns them, so that
// other coordinators' workers run them rather than wait for a worker to
// connect here. With workers, it returns the jobs none of them has the
// headers for: those waiting (broker.Broker.HandBackUnroutable) and
// those a claim just took (a claim does not look at headers), marked
// Unroutable.
type SharedReturn interface {
	// Return puts claimed jobs back at the front of their hosts' queues,
	// their leases ended, for any coordinator to claim. The queue owns
	// them from the call on: what the store does not take now it sends
	// again at a later Tick or Claim, and if this coordinator dies first
	// its leases are swept. A job that ran here keeps its crawl's charge
	// (its page may have been fetched: SharedBudgets); the others were
	// refunded before the call. The hosts of Unroutable jobs are left to
	// other coordinators' claims for a while (their workers may have the
	// headers), so that a job no worker here can take does not come back
	// here at once.
	Return(now time.Time, jobs []broker.HandedBack)
}

// SharedPolicy is this coordinator's politeness, as its broker applies it
// (broker.Politeness). Its functions are the coordinator's: a queue calls
// them only from within its own Push, PushBatch, Claim and Finish, which
// the coordinator calls from its one goroutine.
type SharedPolicy struct {
	// Applies reports whether politeness applies to jobs of a processor
	// (Politeness.Processor: the crawl's fetches; other jobs of a host
	// neither wait for its limits nor count against them).
	Applies func(processor string) bool
	// Limits returns a host's limits in force: configured, with the
	// interval raised by a robots.txt Crawl-delay this coordinator's
	// workers reported.
	Limits func(host string) broker.Limits
}

// holdPoliteness hands a shared queue that can hold politeness
// fleet-wide the broker's policy: the jobs of processor proc ("" every
// job), each host's limits in force.
func holdPoliteness(q SharedQueue, brk *broker.Broker, proc string) {
	p, ok := q.(SharedPoliteness)
	if !ok {
		return
	}
	p.HoldPoliteness(SharedPolicy{
		Applies: func(processor string) bool { return proc == "" || processor == proc },
		Limits:  brk.HostLimits,
	})
}

// sharedState is the core's side of the shared queue.
type sharedState struct {
	next time.Time // the earliest time Tick claims again
}

// sharedPoll is how often an idle coordinator asks the shared queue for
// jobs when its last claim found none.
const sharedPoll = 200 * time.Millisecond

// pushShared hands an accepted job to the shared queue; false if the
// queue did not take it.
func (c *Coordinator) pushShared(now time.Time, spec *broker.Spec) (broker.JobID, bool) {
	j, err := c.cfg.Shared.Push(now, *spec)
	if err != nil || j == 0 {
		c.sharedErrors++
		return 0, false
	}
	c.shared.next = now // claim it (or another) at the next Tick
	return broker.JobID(j), true
}

// pushSharedBatch hands accepted jobs to the shared queue; an id of 0 is
// a job it did not take (or there is no shared queue).
func (c *Coordinator) pushSharedBatch(now time.Time, specs []broker.Spec) []broker.JobID {
	out := make([]broker.JobID, len(specs))
	if c.cfg.Shared == nil || len(specs) == 0 {
		return out
	}
	ids, err := c.cfg.Shared.PushBatch(now, specs)
	if err != nil {
		c.sharedErrors++
	}
	for i := range out {
		if i < len(ids) {
			out[i] = broker.JobID(ids[i])
		}
	}
	c.shared.next = now // claim them (or others) at the next Tick
	return out
}

// claimShared fills this coordinator's window of waiting jobs from the
// shared queue (Tick), after holding the hosts other coordinators backed
// off.
func (c *Coordinator) claimShared(now time.Time) {
	if c.cfg.Shared == nil {
		return
	}
	c.learnBackoffs(now)
	if now.Before(c.shared.next) {
		return
	}
	c.handBack(now)
	// No more than this coordinator's workers can start now: a job
	// claimed for no worker (none connected, all busy) would wait here,
	// its host's polite slot taken, while other coordinators' workers
	// sit idle. Claimed jobs are dispatched in the same step.
	// And no more than this broker has job IDs left for: a claimed job
	// it could not take would be lost.
	want := min(c.cfg.SharedWindow, c.brk.FreeSlots(), c.brk.IDsLeft()) - c.brk.Count(broker.Queued)
	if want <= 0 {
		c.shared.next = now.Add(sharedPoll) // Ready brings it forward when jobs leave
		return
	}
	specs, err := c.cfg.Shared.Claim(now, want)
	if err != nil {
		c.sharedErrors++
	}
	c.sharedClaimed += uint64(len(specs))
	specs = c.routable(now, specs)
	var refused []int
	if b, ok := c.cfg.Shared.(SharedBudgets); ok && len(specs) > 0 {
		if refused, err = b.Charge(now, specs); err != nil {
			c.sharedErrors++ // run them: a lost page beats a lost job
		}
	}
	for i, sp := range specs {
		if i < len(refused) && refused[i] > 0 {
			c.brk.Refuse(now, sp, refused[i])
			continue
		}
		c.brk.Submit(now, sp)
	}
	c.learnBackoffs(now) // those the claim found, before the next dispatch
	if len(specs) < want {
		poll := sharedPoll
		if p, ok := c.cfg.Shared.(SharedPoliteness); ok {
			if w := p.PoliteWait(); w > 0 && w < poll {
				poll = max(w, time.Millisecond)
			}
		}
		c.shared.next = now.Add(poll)
	}
}

// The details of handed-back jobs' job.requeued events.
const (
	handBackWhy     = "handed back to the cluster's queue: no worker on this coordinator may take it"
	handBackUnrtWhy = "handed back to the cluster's queue: no worker on this coordinator has the headers it needs"
)

// handBack returns jobs waiting here to a shared queue that takes them
// (SharedReturn): all of them when no worker of this coordinator may
// take a job, else those no worker here has the headers for.
func (c *Coordinator) handBack(now time.Time) {
	r, ok := c.cfg.Shared.(SharedReturn)
	if !ok || c.brk.Count(broker.Queued) == 0 {
		return
	}
	if c.brk.HasTaker() {
		c.scratch.handed = c.brk.HandBackUnroutable(now, handBackUnrtWhy, c.scratch.handed[:0])
	} else {
		c.scratch.handed = c.brk.HandBack(now, handBackWhy, c.scratch.handed[:0])
	}
	c.returnShared(now, r, true)
}

// returnShared returns the jobs in the scratch's handed to the queue.
// Those charged to their crawls' budgets at their claim that did not run
// here give their pages back first, as a job that ends without a
// dispatch does (SharedBudgets), while they are still leased here: the
// next claim charges them again.
func (c *Coordinator) returnShared(now time.Time, r SharedReturn, charged bool) {
	if len(c.scratch.handed) == 0 {
		return
	}
	if b, ok := c.cfg.Shared.(SharedBudgets); ok && charged {
		var back []ledger.Item
		for _, h := range c.scratch.handed {
			if !h.Ran {
				back = append(back, ledger.Item{Key: h.Key, FP: h.FP})
			}
		}
		if len(back) > 0 {
			b.Refund(now, back)
		}
	}
	r.Return(now, c.scratch.handed)
	c.sharedReturned += uint64(len(c.scratch.handed))
	clear(c.scratch.handed) // their keys' strings
	c.scratch.handed = c.scratch.handed[:0]
}

// routable keeps the claimed jobs some worker of this coordinator has
// the headers for and returns the others to the queue at once, marked
// Unroutable (the queue then leaves their hosts to other coordinators
// for a while). Without a queue that takes jobs back, it keeps all.
func (c *Coordinator) routable(now time.Time, specs []broker.Spec) []broker.Spec {
	r, ok := c.cfg.Shared.(SharedReturn)
	if !ok {
		return specs
	}
	kept := specs[:0]
	c.scratch.handed = c.scratch.handed[:0]
	for _, sp := range specs {
		if c.brk.Routable(sp.Headers) {
			kept = append(kept, sp)
			continue
		}
		c.scratch.handed = append(c.scratch.handed, broker.HandedBack{Key: sp.Key, FP: sp.FP, Unroutable: true})
	}
	c.returnShared(now, r, false) // not charged yet
	return kept
}

// learnBackoffs holds in the broker the hosts other coordinators backed
// off, as the shared queue learned them.
func (c *Coordinator) learnBackoffs(now time.Time) {
	q, ok := c.cfg.Shared.(SharedBackoff)
	if !ok {
		return
	}
	c.scratch.backoffs = q.Backoffs(c.scratch.backoffs[:0])
	for _, bo := range c.scratch.backoffs {
		c.brk.HoldHost(now, bo)
	}
}

// shareBackoffs hands the shared queue the back-offs this coordinator's
// throttles set (Ready); without a queue that holds them they are
// dropped (the broker holds its own).
func (c *Coordinator) shareBackoffs(now time.Time) {
	c.scratch.backoffs = c.brk.TakeBackoffs(c.scratch.backoffs[:0])
	if len(c.scratch.backoffs) == 0 {
		return
	}
	if q, ok := c.cfg.Shared.(SharedBackoff); ok {
		q.BackOff(now, c.scratch.backoffs)
	}
}

// sharedDeadline is when Tick next claims, for NextDeadline.
func (c *Coordinator) sharedDeadline() (time.Time, bool) {
	if c.cfg.Shared == nil {
		return time.Time{}, false
	}
	return c.shared.next, true
}

// finishShared ends the leases of jobs that finished (Ready), and brings
// the next claim forward when the window has room.
func (c *Coordinator) finishShared(now time.Time, fin []broker.Finished) {
	if c.cfg.Shared == nil || len(fin) == 0 {
		return
	}
	items, nok := c.finishedItems(fin)
	c.cfg.Shared.Finish(now, items[:nok:nok], items[nok:])
	if b, ok := c.cfg.Shared.(SharedBudgets); ok {
		// Charged at its claim, never dispatched: its page was not
		// fetched (a job the budget refused was not charged).
		var back []ledger.Item
		for _, f := range fin {
			if f.Failed && f.Attempt == 0 && f.Skipped != "budget" {
				back = append(back, ledger.Item{Key: f.Key, FP: f.FP})
			}
		}
		if len(back) > 0 {
			b.Refund(now, back)
		}
	}
	c.scratch.items = reuse(items)
	if c.brk.Count(broker.Queued) < c.cfg.SharedWindow/2 && c.shared.next.After(now) {
		c.shared.next = now
	}
}

// requeueShared readies a failed job's requeue on a shared queue: it is
// charged to its crawl's budget (it may have failed as budget: run
// uncharged, it would fetch a page past the budget), refused when the
// crawl has no page left, and taken back out of the cluster's failed
// count.
func (c *Coordinator) requeueShared(now time.Time, j broker.JobID, k id.Key, fp id.Fingerprint) error {
	if c.cfg.Shared == nil {
		return nil
	}
	if b, ok := c.cfg.Shared.(SharedBudgets); ok {
		refused, err := b.Charge(now, []broker.Spec{{Key: k, FP: fp, Host: id.Host(k.URL)}})
		if err != nil {
			c.sharedErrors++
			return errorf(ErrConflict, "requeue job %d: charging crawl %s's budget: %v; not requeued", j, k.Crawler, err)
		}
		if len(refused) > 0 && refused[0] > 0 {
			return errorf(ErrConflict, "requeue job %d: crawl %s has dispatched its %d pages; not requeued", j, k.Crawler, refused[0])
		}
	}
	if q, ok := c.cfg.Shared.(SharedCounts); ok {
		q.Unfail(now, []ledger.Item{{Key: k, FP: fp}})
	}
	return nil
}

// SharedStats count the jobs claimed from the shared queue, those
// handed back to it (SharedReturn), and the calls to it that failed.
func (c *Coordinator) SharedStats() (claimed, returned, errors uint64) {
	return c.sharedClaimed, c.sharedReturned, c.sharedErrors
}

// doneBatches marks finished jobs' keys done in a ledger backend with one
// DoneBatch per outcome (ok first, then failed).
func (c *Coordinator) doneBatches(now time.Time, fin []broker.Finished) {
	items, nok := c.finishedItems(fin)
	if nok > 0 {
		c.led.DoneBatch(now, items[:nok:nok], ledger.DoneOK)
	}
	if len(items) > nok {
		c.led.DoneBatch(now, items[nok:], ledger.DoneFailed)
	}
	c.scratch.items = reuse(items)
}

// finishedItems lists fin's keys in the scratch, the ok ones first (nok of
// them), then the failed ones.
func (c *Coordinator) finishedItems(fin []broker.Finished) (items []ledger.Item, nok int) {
	items = c.scratch.items[:0]
	for _, failed := range []bool{false, true} {
		for _, f := range fin {
			if f.Failed == failed {
				items = append(items, ledger.Item{Key: f.Key, FP: f.FP})
			}
		}
		if !failed {
			nok = len(items)
		}
	}
	return items, nok
}
