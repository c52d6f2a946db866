package redis

import (
	"errors"
	"fmt"
	"time"

	"drover/coord/ledger"
)

// Finish ends this coordinator's leases of jobs done (ok) and failed,
// one script per host in one pipeline: a polite job's frees its host's
// slot, and the host's next claim waits an interval from now. The same
// scripts count them in the cluster's totals (their slots' done and
// failed counts, stats.go), which outlive this coordinator. A host's
// script the store did not take is sent again by the next Tick or Finish
// (ending a lease twice is harmless, and the script counts a call sent
// again once), so a transient error does not hold the host's slot; if
// this coordinator dies first its leases are swept and the jobs run
// again elsewhere (at least once).
func (q *Queue) Finish(now time.Time, ok, failed []ledger.Item) {
	l := q.l
	if len(ok)+len(failed) == 0 {
		l.flushFinish()
		return
	}
	ctx, cancel := l.ctx()
	defer cancel()
	// per host, its done jobs' fingerprints, then its failed ones'
	type hostFin struct {
		fps  []any
		done int
	}
	byHost := make(map[string]*hostFin)
	var order []string
	for o, jobs := range [][]ledger.Item{ok, failed} {
		for i := range jobs {
			fp := jobs[i].FP.String()
			h, held := q.held[fp]
			if held {
				delete(q.held, fp)
			} else {
				h = hostOf(&jobs[i].Key) // not claimed here: its URL's host at best
			}
			hf := byHost[h]
			if hf == nil {
				hf = &hostFin{}
				byHost[h] = hf
				order = append(order, h)
			}
			hf.fps = append(hf.fps, fp)
			if o == 0 {
				hf.done++
			}
		}
	}
	if err := l.registerSlots(ctx, order); err != nil {
		l.err = err // the calls wait for the next try, which registers them first
	}
	// behind the calls a previous Finish could not send
	for _, h := range order {
		_, gap := q.limits(h)
		hf := byHost[h]
		for fps, done := hf.fps, hf.done; len(fps) > 0; {
			k := min(len(fps), 1000)
			l.finSeq++
			d := min(done, k)
			args := append([]any{"finish", gap, l.finSeq, l.coord, d}, fps[:k]...)
			l.finRetry = append(l.finRetry, call{host: h, keys: l.queueKeys(h, l.coord), args: args})
			fps, done = fps[k:], done-d
		}
	}
	l.sendFinish(ctx)
}

// Unfail takes failed jobs requeued by this coordinator back out of the
// cluster's failed count (coord.SharedCounts): they are counted again
// when they end. A call the store does not take leaves them counted
// twice (an error, in Err).
func (q *Queue) Unfail(now time.Time, items []ledger.Item) {
	l := q.l
	byHost := make(map[string]int)
	var order []string
	for i := range items {
		h := hostOf(&items[i].Key)
		if _, ok := q.held[items[i].FP.String()]; ok {
			h = q.held[items[i].FP.String()]
		}
		if byHost[h] == 0 {
			order = append(order, h)
		}
		byHost[h]++
	}
	ctx, cancel := l.ctx()
	defer cancel()
	if err := l.registerSlots(ctx, order); err != nil {
		l.err = err
		return
	}
	calls := make([]call, len(order))
	for i, h := range order {
		calls[i] = call{host: h, keys: l.queueKeys(h, l.coord), args: []any{"unfail", byHost[h]}}
	}
	_, errs := l.runScript(once(ctx), queueScript, calls)
	if err := errors.Join(errs...); err != nil {
		l.err = fmt.Errorf("redis queue: taking requeued jobs out of the failed count: %w", err)
	}
}
