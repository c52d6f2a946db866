package redis

import (
	"fmt"
	"strconv"
	"time"

	"drover/coord/id"
	"drover/coord/ledger"
)

// Request asks for key k on behalf of session s (see ledger.Ledger.Request).
func (l *Ledger) Request(now time.Time, s id.Session, reqID uint64, k id.Key, fp id.Fingerprint) (ledger.Verdict, ledger.Reason) {
	r := l.RequestBatch(now, s, reqID, []ledger.Item{{Key: k, FP: fp}}, nil)
	return r[0].Verdict, r[0].Reason
}

// RequestBatch requests every item for session s, one script per host, and
// appends one Result per item to dst.
func (l *Ledger) RequestBatch(now time.Time, s id.Session, reqID uint64, items []ledger.Item, dst []ledger.Result) []ledger.Result {
	l.flushRetry()
	start := len(dst)
	dst = append(dst, make([]ledger.Result, len(items))...)
	if s == 0 {
		for i := range items {
			dst[start+i] = ledger.Result{Verdict: ledger.Error, Reason: ledger.ReasonBadSession}
		}
		return dst
	}
	groups, order := groupItems(items)
	calls := make([]call, len(order))
	for i, host := range order {
		idx := groups[host]
		keys := l.sessKeys(l.baseKeys(host, 3), host, s)
		args := append(l.args("request", now, 2+4*len(idx)), l.owner(s), strconv.FormatUint(reqID, 10))
		for _, j := range idx {
			it := &items[j]
			args = append(args, rawFP(it.FP), it.Key.Crawler, it.Key.Processor, it.Key.URL)
		}
		calls[i] = call{host: host, keys: keys, args: args}
	}
	res, unconfirmed := l.execDue(now, calls)
	for i, host := range order {
		if res[i] == nil {
			// Failed: it may have run (a reply lost). What it granted
			// this session is granted, and held (Release must find it).
			res[i] = l.readBack(host, items, groups[host], func(m stored) (ledger.Result, bool) {
				return ledger.Result{Verdict: ledger.OK}, m.st == "r" && m.f2 == l.owner(s)
			})
		}
		for n, j := range groups[host] {
			r := ledger.Result{Verdict: ledger.Error, Reason: ReasonUnavailable}
			if n < len(res[i]) {
				r = res[i][n]
			}
			// what the master did is tracked even when its replicas did
			// not confirm it (Release must find it)
			if r.Verdict == ledger.OK || r.Verdict == ledger.Wait {
				l.held(s, host, items[j].FP)
			}
			if r.Verdict == ledger.Wait && l.inbox != nil {
				l.inbox.wait(l.owner(s), items[j].FP, host, reqID, s)
			}
			if unconfirmed[i] {
				r = ledger.Result{Verdict: ledger.Error, Reason: ReasonUnavailable}
			}
			dst[start+j] = r
		}
	}
	l.noteUnavailable(now, dst[start:])
	return dst
}

// unavailableEvery bounds how often the ledger logs the keys it answered
// unavailable: an outage is a line every few seconds, not one per batch.
const unavailableEvery = 10 * time.Second

// noteUnavailable counts the results answered unavailable and logs them,
// with the store's last error, at most once every unavailableEvery: a
// producer sees only "unavailable", the operator needs the why.
func (l *Ledger) noteUnavailable(now time.Time, res []ledger.Result) {
	n := 0
	for _, r := range res {
		if r.Verdict == ledger.Error && r.Reason == ReasonUnavailable {
			n++
		}
	}
	if keys, due := l.unavail.add(now, n); due {
		l.logWarn("keys refused as unavailable, to be submitted again: the Redis store failed, or did not have a shard's writes confirmed by its replicas (store.redis.wait_replicas)",
			"keys", keys, "err", l.err)
	}
}

// due prepends to calls, for every host whose next lease deadline has
// passed at now, a call expiring its leases: expiry is applied at the start
// of every call that carries a time, whichever hosts it is about.
func (l *Ledger) due(now time.Time, calls []call) []call {
	hosts := l.leases.due(now.UnixMicro())
	if len(hosts) == 0 {
		return calls
	}
	pre := make([]call, 0, len(hosts)+len(calls))
	for _, h := range l.hostList {
		if _, ok := hosts[h]; ok {
			pre = append(pre, call{host: h, keys: l.baseKeys(h, 0), args: l.args("expire", now, 0)})
		}
	}
	return append(pre, calls...)
}

// execDue runs calls after the lease expiries due at now (due), and returns
// the results of calls alone and which of them their replicas did not
// confirm.
func (l *Ledger) execDue(now time.Time, calls []call) ([][]ledger.Result, []bool) {
	all := l.due(now, calls)
	res, unconfirmed, _ := l.exec(all)
	skip := len(all) - len(calls)
	return res[skip:], unconfirmed[skip:]
}

// groupItems groups item indexes by host, hosts in first-seen order.
func groupItems(items []ledger.Item) (map[string][]int, []string) {
	groups := make(map[string][]int)
	var order []string
	for i := range items {
		h := hostOf(&items[i].Key)
		if _, ok := groups[h]; !ok {
			order = append(order, h)
		}
		groups[h] = append(groups[h], i)
	}
	return groups, order
}

// Queue records that session s, owner of requested key fp, has queued it.
func (l *Ledger) Queue(now time.Time, s id.Session, fp id.Fingerprint) (ledger.Verdict, ledger.Reason) {
	r := l.QueueBatch(now, s, []id.Fingerprint{fp}, nil)
	return r[0].Verdict, r[0].Reason
}

// QueueBatch queues every fingerprint for session s. A fingerprint this
// coordinator has never seen is answered Error "unknown": queue is only
// for keys the session requested here.
func (l *Ledger) QueueBatch(now time.Time, s id.Session, fps []id.Fingerprint, dst []ledger.Result) []ledger.Result {
	l.flushRetry()
	start := len(dst)
	dst = append(dst, make([]ledger.Result, len(fps))...)
	groups := make(map[string][]int)
	var order []string
	for i, fp := range fps {
		h, ok := l.fpHost[fp]
		if !ok {
			dst[start+i] = ledger.Result{Verdict: ledger.Error, Reason: ledger.ReasonUnknown}
			continue
		}
		if _, ok := groups[h]; !ok {
			order = append(order, h)
		}
		groups[h] = append(groups[h], i)
	}
	calls := make([]call, len(order))
	for i, host := range order {
		idx := groups[host]
		keys := l.sessKeys(l.baseKeys(host, 3), host, s)
		args := append(l.args("queue", now, 1+len(idx)), l.owner(s))
		for _, j := range idx {
			args = append(args, rawFP(fps[j]))
		}
		calls[i] = call{host: host, keys: keys, args: args}
	}
	res, unconfirmed := l.execDue(now, calls)
	for i, host := range order {
		if res[i] == nil {
			// Failed: it may have run (a reply lost). A key it queued is
			// queued: answered OK, so the caller pushes its job (else the
			// key stayed queued with no job, and the job never ran).
			its := make([]ledger.Item, len(groups[host]))
			for n, j := range groups[host] {
				its[n].FP = fps[j]
			}
			res[i] = l.readBack(host, its, nil, func(m stored) (ledger.Result, bool) {
				return ledger.Result{Verdict: ledger.OK}, m.st == "q"
			})
		}
		for n, j := range groups[host] {
			r := ledger.Result{Verdict: ledger.Error, Reason: ReasonUnavailable}
			if n < len(res[i]) && !unconfirmed[i] {
				r = res[i][n]
			}
			dst[start+j] = r
		}
	}
	l.noteUnavailable(now, dst[start:])
	return dst
}

// readBack reads the records of a failed call's items on host (items[idx],
// or every item when idx is nil) and answers, per item, what done says
// the call did for it, or Error unavailable (nothing known, or not
// done); nil when the read fails too, or (Config.WaitReplicas) the
// host's replicas do not confirm what it read.
func (l *Ledger) readBack(host string, items []ledger.Item, idx []int, done func(stored) (ledger.Result, bool)) []ledger.Result {
	fps := make([]id.Fingerprint, 0, len(items))
	if idx == nil {
		for i := range items {
			fps = append(fps, items[i].FP)
		}
	} else {
		for _, j := range idx {
			fps = append(fps, items[j].FP)
		}
	}
	ctx, cancel := l.ctx()
	defer cancel()
	ms, err := l.get(ctx, host, fps)
	if err != nil {
		l.err = err
		return nil
	}
	// What the master holds counts only once its replicas hold it too
	// (Config.WaitReplicas): a failover could lose it.
	if bad := l.waitHosts(ctx, []string{host}); len(bad) > 0 {
		return nil
	}
	out := make([]ledger.Result, len(ms))
	for n, m := range ms {
		r, ok := done(m)
		if !ok {
			r = ledger.Result{Verdict: ledger.Error, Reason: ReasonUnavailable}
		}
		out[n] = r
	}
	return out
}

// Done marks key k done with outcome o, whatever its state.
func (l *Ledger) Done(now time.Time, k id.Key, fp id.Fingerprint, o ledger.Outcome) {
	l.DoneBatch(now, []ledger.Item{{Key: k, FP: fp}}, o)
}

// DoneBatch marks every item done with outcome o. What the store does not
// take is sent again before the next call.
func (l *Ledger) DoneBatch(now time.Time, items []ledger.Item, o ledger.Outcome) {
	l.flushRetry()
	oc := "0"
	if o != ledger.DoneOK {
		oc = "1"
	}
	groups, order := groupItems(items)
	calls := make([]call, len(order))
	for i, host := range order {
		idx := groups[host]
		keys := l.baseKeys(host, 0)
		args := append(l.args("done", now, 1+4*len(idx)), oc)
		for _, j := range idx {
			it := &items[j]
			args = append(args, rawFP(it.FP), it.Key.Crawler, it.Key.Processor, it.Key.URL)
			l.fpHost[it.FP] = host
		}
		calls[i] = call{host: host, keys: keys, args: args}
		if l.cfg.Ledger.DoneTTL != 0 || l.cfg.Ledger.FailedTTL != 0 {
			l.sweeping[host] = struct{}{}
		}
	}
	l.execRetrying(l.due(now, calls))
}

// Requeue makes key k queued whatever its state (see ledger.Ledger.Requeue).
func (l *Ledger) Requeue(now time.Time, k id.Key, fp id.Fingerprint) {
	l.flushRetry()
	host := hostOf(&k)
	l.fpHost[fp] = host
	keys := l.baseKeys(host, 0)
	args := append(l.args("requeue", now, 4), rawFP(fp), k.Crawler, k.Processor, k.URL)
	l.execRetrying(l.due(now, []call{{host: host, keys: keys, args: args}}))
}

// Release lets go of everything session s holds or waits on, on every
// host it touched.
func (l *Ledger) Release(now time.Time, s id.Session) {
	l.flushRetry()
	hs := l.sessions[s]
	if len(hs) == 0 {
		if calls := l.due(now, nil); len(calls) > 0 {
			l.execRetrying(calls)
		}
		return
	}
	delete(l.sessions, s)
	if l.inbox != nil {
		l.inbox.release(l.owner(s))
	}
	calls := make([]call, 0, len(hs))
	for _, host := range l.hostList { // touched order: deterministic
		if _, ok := hs[host]; !ok {
			continue
		}
		keys := l.sessKeys(l.baseKeys(host, 3), host, s)
		calls = append(calls, call{host: host, keys: keys, args: append(l.args("release", now, 1), l.owner(s))})
	}
	l.execRetrying(l.due(now, calls))
}

// execRetrying runs calls and keeps the ones the store did not take for
// the next call (they are idempotent or order-insensitive: done, requeue,
// release).
func (l *Ledger) execRetrying(calls []call) {
	res, unconfirmed, err := l.exec(calls)
	if err == nil {
		return
	}
	for i, c := range calls {
		if res[i] == nil || unconfirmed[i] {
			c.resent = true
			l.retry = append(l.retry, c)
		}
	}
}

// flushRetry sends again what the store did not take, oldest first.
func (l *Ledger) flushRetry() {
	if len(l.retry) == 0 {
		return
	}
	calls := l.retry
	l.retry = nil
	l.execRetrying(calls)
}

// Pending is the number of calls waiting to be sent again.
func (l *Ledger) Pending() int { return len(l.retry) }

// Tick sends again what the store did not take (the ledger's calls, the
// shared queue's finishes), expires due leases on the hosts whose next
// lease deadline has passed, and sweeps expired done records (at most
// SweepLimit per outcome on each host with some).
func (l *Ledger) Tick(now time.Time) {
	l.flushRetry()
	l.flushFinish()
	if q := l.queue; q != nil {
		q.flushForget()
		q.flushBackoffs(now)
		q.pollBackoffs(now)
	}
	if l.inbox != nil && !now.Before(l.nextBeat) {
		l.Maintain(now)
	}
	var calls []call
	due := l.leases.due(now.UnixMicro())
	for _, host := range l.hostList {
		_, d := due[host]
		_, s := l.sweeping[host]
		if !d && !s {
			continue
		}
		calls = append(calls, call{host: host, keys: l.baseKeys(host, 0), args: l.args("tick", now, 0)})
	}
	if len(calls) > 0 {
		_, _, _ = l.exec(calls)
	}
}

// NextDeadline is the earliest lease deadline on the hosts this
// coordinator knows.
func (l *Ledger) NextDeadline() (time.Time, bool) {
	us, ok := l.leases.min()
	if !ok {
		return time.Time{}, false
	}
	return time.UnixMicro(us).UTC(), true
}

// Restore applies a persisted record quietly: the way to rebuild the
// ledger from, or import it into the cluster from, an embedded store.
func (l *Ledger) Restore(w ledger.Write) {
	host := hostOf(&w.Key)
	if w.Key.URL == "" {
		h, ok := l.fpHost[w.FP]
		if !ok {
			l.err = fmt.Errorf("redis ledger: restore %v of %v without its key: records are placed by the key's host; want Write.Key set", w.Op, w.FP)
			return
		}
		host = h
	}
	l.fpHost[w.FP] = host
	keys := l.baseKeys(host, 0)
	args := l.args("restore", w.At, 6)
	args[6] = "1" // quiet
	oc := "0"
	if w.Outcome != ledger.DoneOK {
		oc = "1"
	}
	args = append(args, w.Op.String(), rawFP(w.FP), oc, w.Key.Crawler, w.Key.Processor, w.Key.URL)
	if w.Op == ledger.PutDone && (l.cfg.Ledger.DoneTTL != 0 || l.cfg.Ledger.FailedTTL != 0) {
		l.sweeping[host] = struct{}{}
	}
	l.execRetrying([]call{{host: host, keys: keys, args: args}})
}

// TakeAnswers appends the deferred answers produced (and received from
// other coordinators) since the last call.
func (l *Ledger) TakeAnswers(dst []ledger.Answer) []ledger.Answer {
	if l.inbox != nil {
		for _, a := range l.inbox.take(l.owner) {
			if h, ok := l.fpHost[a.FP]; ok && a.Verdict == ledger.OK {
				l.held(a.Session, h, a.FP)
			}
			l.answers = append(l.answers, a)
		}
	}
	dst = append(dst, l.answers...)
	l.answers = l.answers[:0]
	return dst
}

// TakeEvents appends the events produced since the last call.
func (l *Ledger) TakeEvents(dst []ledger.Event) []ledger.Event {
	dst = append(dst, l.events...)
	l.events = l.events[:0]
	return dst
}

// TakeWrites appends the records to persist since the last call (with
// Config.Ledger.Persist): a log of the cluster's changes this coordinator
// made, for an embedded store kept as a mirror.
func (l *Ledger) TakeWrites(dst []ledger.Write) []ledger.Write {
	dst = append(dst, l.writes...)
	l.writes = l.writes[:0]
	return dst
}
