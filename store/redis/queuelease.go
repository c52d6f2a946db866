package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"drover/coord/broker"
)

// forget frees, on every host whose claim got no answer, the jobs leased
// to this coordinator that it does not hold (queue.lua's forget): those a
// lost answer leased go back to the front of their queues and their slots
// are free. A host whose call fails stays unsure, tried again at the next
// Tick or Claim.
func (q *Queue) forget(ctx context.Context) {
	n, hosts := q.free(ctx)
	q.Unclaimed += uint64(n)
	if n > 0 {
		q.l.logWarn("claims whose answer was lost (or jobs handed back that the store had not taken): the jobs they leased went back to the queue", "jobs", n, "hosts", hosts)
	}
}

// free runs queue.lua's forget on every unsure host: the jobs leased to
// this coordinator there that it does not hold go back to the front of
// their queues. A host whose call fails stays unsure. It answers how many
// jobs went back, on how many hosts.
func (q *Queue) free(ctx context.Context) (n, hosts int) {
	if len(q.unsure) == 0 {
		return 0, 0
	}
	l := q.l
	byHost := make(map[string][]any, len(q.unsure))
	for h := range q.unsure {
		byHost[h] = []any{"forget"}
	}
	for fp, h := range q.held {
		if a, ok := byHost[h]; ok {
			byHost[h] = append(a, fp)
		}
	}
	// A finish the store has not taken yet ends its lease later.
	for _, c := range l.finRetry {
		if a, ok := byHost[c.host]; ok {
			byHost[c.host] = append(a, c.args[2:]...)
		}
	}
	calls := make([]call, 0, len(byHost))
	for h, args := range byHost {
		calls = append(calls, call{host: h, keys: l.queueKeys(h, l.coord), args: args})
	}
	vals, cerrs := l.runScript(ctx, queueScript, calls)
	var back []any
	var errs []error
	for i, c := range calls {
		k, ok := vals[i].(int64)
		if cerrs[i] != nil || !ok {
			errs = append(errs, fmt.Errorf("redis queue: freeing jobs leased here and not held on host %q: %w (answer %v)", c.host, cerrs[i], vals[i]))
			continue
		}
		delete(q.unsure, c.host)
		if k > 0 {
			n += int(k)
			back = append(back, c.host)
		}
	}
	// The script counted them back in their slots' queued counts: only
	// the ready marks.
	if len(back) > 0 {
		if err := l.rdb.SAdd(ctx, l.readyKey(), back...).Err(); err != nil {
			errs = append(errs, fmt.Errorf("redis queue: marking %d hosts ready again: %w", len(back), err))
		}
	}
	// A return a failover could lose would leave the jobs leased to a
	// coordinator that does not hold them: confirmed, or tried again.
	for h, err := range l.waitHosts(ctx, hostNames(back)) {
		q.unsure[h] = struct{}{}
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		l.err = err
	}
	return n, len(back)
}

// hostNames is hosts as strings.
func hostNames(hosts []any) []string {
	out := make([]string, len(hosts))
	for i, h := range hosts {
		out[i], _ = h.(string)
	}
	return out
}

// Return hands jobs this coordinator claimed back to the queue
// (coord.SharedReturn): it has no worker left to run them. Each goes back
// to the front of its host's queue, its lease ended and its polite slot
// freed (queue.lua's forget, on the hosts whose jobs this coordinator no
// longer holds); a host whose call fails is tried again at the next Tick
// or Claim, and if this coordinator dies first the sweep returns them. A
// job that ran here keeps its crawl's charge (crawlkept.go); the others'
// the coordinator refunded first.
func (q *Queue) Return(now time.Time, jobs []broker.HandedBack) {
	if len(jobs) == 0 {
		return
	}
	l := q.l
	ctx, cancel := l.ctx()
	defer cancel()
	q.forget(ctx) // a lost claim's leases first, logged as such
	byCrawl := make(map[string][]any)
	unrt := 0
	for i := range jobs {
		j := &jobs[i]
		fp := j.FP.String()
		h, held := q.held[fp]
		if !held {
			h = hostOf(&j.Key) // not known leased: the host's forget frees it if it is
		}
		delete(q.held, fp)
		q.unsure[h] = struct{}{}
		if j.Unroutable {
			if q.avoid == nil {
				q.avoid = make(map[string]time.Time)
			}
			q.avoid[h] = now.Add(AvoidUnroutable)
			unrt++
		}
		if j.Ran && j.Key.Crawler != "" {
			byCrawl[j.Key.Crawler] = append(byCrawl[j.Key.Crawler], rawFP(j.FP))
		}
	}
	if err := l.keepFPs(ctx, l.coord, byCrawl); err != nil {
		l.err = err // the jobs go back all the same: a page too many beats a job stuck
	}
	n, hosts := q.free(ctx)
	q.HandedBack += uint64(n)
	if l.cfg.Log == nil {
		return
	}
	if unrt > 0 {
		// A job no worker in the cluster can take comes back every
		// AvoidUnroutable: one line a minute says how many.
		if n, due := q.unrtLog.add(now, len(jobs)); due {
			l.cfg.Log.Info("jobs handed back to the cluster's queue: no worker on this coordinator has the headers they need (a line a minute at most)", "jobs", n, "hosts left to other coordinators for", AvoidUnroutable)
		}
		return
	}
	l.cfg.Log.Info("jobs handed back to the cluster's queue: no worker on this coordinator may take them", "jobs", len(jobs), "returned now", n, "hosts", hosts)
}

// AvoidUnroutable is how long a coordinator's claims leave the host of a
// job it handed back for want of a worker with the job's headers to the
// other coordinators.
const AvoidUnroutable = 5 * time.Second

// avoided drops from hosts those this coordinator leaves to the others
// (Return) and forgets the avoidances past their end.
func (q *Queue) avoided(now time.Time, hosts []string) []string {
	if len(q.avoid) == 0 {
		return hosts
	}
	for h, until := range q.avoid {
		if !now.Before(until) {
			delete(q.avoid, h)
		}
	}
	return slices.DeleteFunc(hosts, func(h string) bool {
		_, ok := q.avoid[h]
		return ok
	})
}

// flushForget runs forget when a claim got no answer (Tick).
func (q *Queue) flushForget() {
	if len(q.unsure) == 0 {
		return
	}
	ctx, cancel := q.l.ctx()
	defer cancel()
	q.forget(ctx)
}

// flushFinish sends again the finish calls the store did not take.
func (l *Ledger) flushFinish() {
	if len(l.finRetry) == 0 {
		return
	}
	ctx, cancel := l.ctx()
	defer cancel()
	l.sendFinish(ctx)
}

// sendFinish sends the pending finish calls in one pipeline (the slots
// they count in registered first), keeping those the store does not take
// for the next try, in their order: a slot's calls are counted in the
// order of their numbers.
func (l *Ledger) sendFinish(ctx context.Context) {
	hosts := make([]string, len(l.finRetry))
	for i, c := range l.finRetry {
		hosts[i] = c.host
	}
	if err := l.registerSlots(ctx, hosts); err != nil {
		l.err = fmt.Errorf("redis queue: ending leases and counting finished jobs (%d hosts' calls kept to send again): %w", len(l.finRetry), err)
		return
	}
	calls := l.finRetry
	l.finRetry = nil
	_, errs := l.runScript(once(ctx), queueScript, calls)
	var failed []error
	for i, err := range errs {
		if err != nil {
			l.finRetry = append(l.finRetry, calls[i])
			failed = append(failed, fmt.Errorf("host %q: %w", calls[i].host, err))
		}
	}
	if err := errors.Join(failed...); err != nil {
		l.err = fmt.Errorf("redis queue: ending leases and counting finished jobs (%d hosts' calls kept to send again): %w", len(l.finRetry), err)
	}
}

// returnJobs puts the jobs leased to coordinator d (dead, or this one
// stopping) on hosts back at the front of their queues, a pipeline of
// scripts per 1000 hosts, their crawls' charges kept, and returns how
// many went back.
func (l *Ledger) returnJobs(ctx context.Context, d string, hosts []string) (int, error) {
	var errs []error
	n := 0
	var back []any
	for part := range slices.Chunk(hosts, 1000) {
		// Their crawls' charges are kept first: d may have dispatched
		// them (crawlkept.go).
		if err := l.keepCharges(ctx, d, part); err != nil {
			return n, err
		}
		calls := make([]call, len(part))
		for i, h := range part {
			calls[i] = call{host: h, keys: l.queueKeys(h, d), args: []any{"unlease", d}}
		}
		vals, cerrs := l.runScript(ctx, queueScript, calls)
		for i, h := range part {
			c, ok := vals[i].(int64)
			if cerrs[i] != nil || !ok {
				errs = append(errs, fmt.Errorf("redis queue: returning coordinator %s's jobs on host %q: %w (answer %v)", d, h, cerrs[i], vals[i]))
				continue
			}
			if c > 0 {
				n += int(c)
				back = append(back, h)
			}
		}
	}
	if n > 0 {
		if err := l.rdb.SAdd(ctx, l.readyKey(), back...).Err(); err != nil {
			errs = append(errs, fmt.Errorf("redis queue: marking %d hosts ready again: %w", len(back), err))
		}
	}
	// A return a failover could lose would leave the jobs in a lease
	// nobody sweeps again: confirmed, or the sweep is tried again.
	for _, err := range l.waitHosts(ctx, hosts) {
		errs = append(errs, err)
	}
	return n, errors.Join(errs...)
}

// ReturnLeased puts every job this coordinator claimed and did not finish
// back at the front of its queue, for the other coordinators (a clean
// stop). It returns how many went back.
func (q *Queue) ReturnLeased() (int, error) {
	l := q.l
	ctx, cancel := l.ctx()
	defer cancel()
	clear(q.held)
	clear(q.unsure)
	return l.returnJobs(ctx, l.coord, l.hostList)
}

// waitHosts, with Config.WaitReplicas, waits until the replicas of the
// shards of hosts hold what was written there (wait.go: WAIT after a
// write to the host's counters hash, which is on the same slot): the
// queue's writes get the same durability as the ledger's. It returns the
// hosts whose writes are not confirmed.
func (l *Ledger) waitHosts(ctx context.Context, hosts []string) map[string]error {
	if l.cfg.WaitReplicas <= 0 || len(hosts) == 0 {
		return nil
	}
	calls := make([]call, len(hosts))
	ran := make([]bool, len(hosts))
	for i, h := range hosts {
		calls[i] = call{host: h, keys: []string{l.pre(h) + "n"}, args: []any{"queue-write"}}
		ran[i] = true
	}
	var bad map[string]error
	for i, err := range l.waitReplicas(ctx, calls, ran) {
		if err != nil {
			if bad == nil {
				bad = make(map[string]error)
			}
			bad[hosts[i]] = err
		}
	}
	return bad
}
