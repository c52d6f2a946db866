package broker

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"drover/admin"
	"drover/coord/id"
)

// Durability (issue 7): the broker's side of persisting jobs and rebuilding
// the broker from them after a restart.
//
// Record snapshots one job as a JobRecord for the store; Restore reinserts
// one persisted job into every index, in ascending ID order, without
// emitting events or charging anything; FinishRestore orders the queues,
// re-arms host back-offs, applies done-record retention and the persisted
// counters, and advances the next job ID.
//
// Jobs that were dispatched when the coordinator died are held, during the
// reclaim wait, by a placeholder record of their worker: a worker record
// with the worker's ID, no session, and the lost flag (it takes no jobs, is
// in no ready list and counts as no capable worker). When that worker says
// HELLO again, Register treats the placeholder as the worker's old record:
// the jobs its held list names stay with it, the others are requeued
// uncharged. EndReclaim requeues, uncharged, whatever no worker reclaimed.

// JobRecord is the persisted form of one job: its spec, state, counters and
// attempt history. The values and names of State are those of JobState; a
// job waiting its retry delay is recorded as queued with its RetryAt.
// Headers and Payload are shared with the broker (Record) or taken over by
// it (Restore): nobody may modify them.
type JobRecord struct {
	ID        JobID             // never 0; never reused
	FP        id.Fingerprint    // the work key's fingerprint
	Key       id.Key            // the work key
	Host      string            // the per-host back-off key
	Headers   map[string]string // required worker headers
	Payload   []byte            // opaque payload (nil once done)
	State     JobState          // queued, dispatched, backoff, done or failed
	Attempts  int               // dispatches so far
	Failures  int               // failures charged to the job's budget
	Throttles int               // throttled outcomes so far
	RetryAt   time.Time         // backoff, or queued waiting a retry delay: when the job may run again
	Worker    string            // dispatched: the worker holding it
	LastError string            // the last failure or throttle message
	Created   time.Time         // when it was submitted
	Updated   time.Time         // its last state change (also: when it was queued, entered back-off, ended)
	History   []admin.Attempt   // the newest attempts, oldest first
}

// Record returns job jid as a JobRecord; false when there is no such job or
// its record was forgotten (Config.DoneRetention).
func (b *Broker) Record(jid JobID) (JobRecord, bool) {
	j := b.jobs.get(jid)
	if j == nil {
		return JobRecord{}, false
	}
	r := JobRecord{
		ID:        j.jobID(),
		FP:        j.fp,
		Key:       b.key(j),
		Host:      b.hostOf(j).name,
		Headers:   b.classOf(j).headers,
		Payload:   b.payload(j),
		State:     j.state,
		Attempts:  int(b.jobAttempts(j)),
		Failures:  int(b.jobFailures(j)),
		Throttles: int(b.jobThrottles(j)),
		RetryAt:   b.retryTime(j),
		LastError: b.lastErr(j),
		Created:   tm(j.created),
		Updated:   tm(j.updated),
		History:   b.adminHistory(j),
	}
	if b.workerOf(j) != nil {
		r.Worker = b.workerOf(j).id
	}
	if b.retrying(j) {
		r.State = Queued // queued with a retry time: waiting its retry delay (retry.go)
	}
	return r, true
}

// HostBackoffJobs appends to dst the jobs in back-off on the host of job
// jid (in the order they entered it). A throttle that extends a host's
// back-off moves the retry time of all of them without an event per job;
// the coordinator persists them again when it sees one.
func (b *Broker) HostBackoffJobs(jid JobID, dst []JobID) []JobID {
	j := b.jobs.get(jid)
	if j == nil {
		return dst
	}
	for bl, k := &b.hostOf(j).backoff, b.hostOf(j).backoff.head; k != nil; k = bl.next(&b.jobs, k) {
		dst = append(dst, k.jobID())
	}
	return dst
}

// Counters are the broker's running totals, persisted as the coordinator's
// meta records so that a restarted coordinator continues them.
type Counters struct {
	LastID      JobID // the highest job ID ever allocated: the next is LastID+1
	Dispatches  uint64
	Completions uint64
	Failures    uint64
	Throttles   uint64
	Orphans     uint64
	Paused      bool
}

// Counters returns the running totals in constant time.
func (b *Broker) Counters() Counters {
	return Counters{
		LastID:      JobID(b.jobs.n),
		Dispatches:  b.dispatches,
		Completions: b.completions,
		Failures:    b.failures,
		Throttles:   b.throttles,
		Orphans:     b.orphans,
		Paused:      b.paused,
	}
}

// ErrRestore: Restore or FinishRestore was given a record that cannot be
// restored, or was called when the broker can no longer be restored into.
var ErrRestore = errors.New("cannot restore")

// maxRestoreID bounds the job IDs a restore accepts: the age index costs a
// byte per ID, so a corrupt ID must not make it allocate without bound,
// and lists link jobs by 32-bit ID (maxJobID).
const maxRestoreID = maxJobID

// isPlaceholder reports whether w holds restored jobs for a worker that has
// not reconnected since the restart.
func isPlaceholder(w *worker) bool { return w != nil && w.lost && w.session == 0 }

// Restore reinserts a persisted job with its state, counters and history
// into every index, keeping its ID, without emitting events, charging it or
// dispatching it. Records must come in ascending ID order (as the store
// returns them), before any worker registers; IDs skipped are treated as
// forgotten done jobs and never reused. A dispatched job is held by a
// placeholder record of its worker until the worker reclaims it (Register
// with it in held) or EndReclaim requeues it. Call FinishRestore after the
// last record.
func (b *Broker) Restore(r *JobRecord) error {
	switch {
	case len(b.sessions) > 0:
		return fmt.Errorf("restore job %d: %w: %d workers registered already, want to restore before any registers", r.ID, ErrRestore, len(b.sessions))
	case r.ID == 0:
		return fmt.Errorf("restore job: %w: ID 0, want the job's persisted ID", ErrRestore)
	case r.ID <= JobID(b.jobs.n):
		return fmt.Errorf("restore job %d: %w: IDs up to %d are taken, want ascending IDs", r.ID, ErrRestore, b.jobs.n)
	case r.ID > maxRestoreID:
		return fmt.Errorf("restore job %d: %w: ID out of range, want at most %d", r.ID, ErrRestore, maxRestoreID)
	case r.State < Queued || r.State >= nStates:
		return fmt.Errorf("restore job %d: %w: state %d, want queued, dispatched, backoff, done or failed", r.ID, ErrRestore, r.State)
	case r.State == Dispatched && r.Worker == "":
		return fmt.Errorf("restore job %d: %w: dispatched to no worker, want the worker's id", r.ID, ErrRestore)
	case r.Attempts < 0 || r.Failures < 0 || r.Throttles < 0 ||
		r.Attempts > math.MaxInt32 || r.Failures > math.MaxInt32 || r.Throttles > math.MaxInt32:
		return fmt.Errorf("restore job %d: %w: counters attempts %d, failures %d, throttles %d, want 0..%d", r.ID, ErrRestore, r.Attempts, r.Failures, r.Throttles, math.MaxInt32)
	}
	if r.State == Dispatched {
		if w := b.workers[r.Worker]; w != nil && !isPlaceholder(w) {
			return fmt.Errorf("restore job %d: %w: worker %q has a live or lost record, want only restored placeholders", r.ID, ErrRestore, r.Worker)
		}
	}
	st := r.State
	b.skipTo(int(r.ID) - 1)
	j := b.jobs.alloc()
	j.id = uint32(b.jobs.n)
	h := b.fillFromRecord(j, r)
	retry := st == Queued && !r.RetryAt.IsZero() // waiting its retry delay (retry.go)
	if retry {
		st = Backoff
	}
	switch {
	case retry:
		b.moreFor(j).retryAt = ns(r.RetryAt)
	case st == Backoff:
		// The host's back-off ends at the latest of its jobs' retry
		// times (FinishRestore): their retry time is the host's.
		if b.restoreUntil == nil {
			b.restoreUntil = make(map[*host]int64)
		}
		b.restoreUntil[h] = max(b.restoreUntil[h], ns(r.RetryAt))
	}
	j.setFlag(jobUnrec, !b.restoreClean && (st == Queued || st == Backoff || st == Dispatched))
	b.enter(j, h, st)
	switch {
	case st == Queued:
		// In ID order for now: FinishRestore sorts the queues by the time
		// each job was queued.
		b.classOf(j).push(b, j) // lanes are built by FinishRestore
	case st == Dispatched:
		b.hold(b.placeholder(r.Worker), j, 0) // FinishRestore sets its host
	case retry:
		b.pushRetry(j)
	case st == Backoff:
		h.backoff.push(j)
	case st == Done:
		b.setPayload(j, nil)
		b.dones.push(j)
	case st == Failed:
		b.fails.push(j)
	}
	return nil
}

// fillFromRecord sets what a restored or paged-in job takes from its
// record: spec, class, host, times, counters, last error and the newest
// history entries. It returns the job's host.
func (b *Broker) fillFromRecord(j *job, r *JobRecord) *host {
	c := b.classFor(r.Headers)
	h := b.hostFor(r.Host)
	b.setKey(j, &r.Key, r.FP) // Host: h.name; Headers: c.headers
	b.setPayload(j, r.Payload)
	j.class = c.no
	j.host = h.no
	j.setFlag(jobFree, !b.cfg.Politeness.applies(r.Key.Processor))
	j.created = ns(r.Created)
	j.updated = ns(r.Updated)
	if r.Attempts != 0 || r.Failures != 0 || r.Throttles != 0 {
		m := b.moreFor(j)
		m.attempts, m.failures, m.throttles = int32(r.Attempts), int32(r.Failures), int32(r.Throttles)
	}
	b.setLastError(j, r.LastError)
	hist := r.History
	if len(hist) > b.cfg.HistoryLimit {
		hist = hist[len(hist)-b.cfg.HistoryLimit:]
	}
	for _, a := range hist {
		b.addAttempt(j, a.Worker, ns(a.At), b.cfg.HistoryLimit)
		made := b.moreOf(j).history // addAttempt made it
		made[len(made)-1].outcome = a.Outcome
		made[len(made)-1].err = a.Error
	}
	return h
}

// placeholder returns the placeholder record of worker wid, creating it.
func (b *Broker) placeholder(wid string) *worker {
	if w := b.workers[wid]; w != nil {
		return w
	}
	w := &worker{id: wid, lost: true}
	b.workers[wid] = w
	i, _ := slices.BinarySearchFunc(b.wsorted, wid, func(w *worker, id string) int { return strings.Compare(w.id, id) })
	b.wsorted = slices.Insert(b.wsorted, i, w)
	return w
}

// skipTo advances the ID allocator to n: IDs not restored are forgotten
// jobs (their records are absent) and are never handed out again. Whole
// chunks of forgotten IDs take no record memory.
func (b *Broker) skipTo(n int) {
	s := &b.jobs
	if n <= s.n {
		return
	}
	b.age.states = append(b.age.states, make([]JobState, n-s.n)...)
	for s.n < n {
		i := s.n
		c := i >> chunkBits
		if c == len(s.chunks) {
			if i&(chunkSize-1) == 0 && n-i >= chunkSize {
				s.chunks = append(s.chunks, nil)
				s.alive = append(s.alive, 0)
				s.n += chunkSize
				continue
			}
			s.addChunk()
		}
		s.n = min(n, (c+1)<<chunkBits)
	}
}

// RestoreState is what FinishRestore applies besides the job records.
type RestoreState struct {
	// Counters as persisted. LastID advances the allocator: IDs up to it
	// are never reused, even when their records are gone.
	Counters Counters
}

// RestoreSummary says what FinishRestore rebuilt.
type RestoreSummary struct {
	// Jobs restored by state (done before retention).
	Queued, Dispatched, Backoff, Done, Failed int
	// Reclaim lists the restored dispatched jobs, ascending: they wait for
	// their workers to reclaim them until EndReclaim.
	Reclaim []JobID
	// Workers names the workers they wait for, sorted.
	Workers []string
	// Forgotten is how many done jobs are counted without a record.
	Forgotten int
}

// FinishRestore ends a restore at time now: queued jobs are ordered by the
// time they were queued (then by ID), each host with jobs in back-off is
// backed off until the latest retry time among them (its back-off level
// restarts at 1, which is not persisted), jobs no worker can take count as
// unroutable from now (workers have had no chance to reconnect), done
// records beyond Config.DoneRetention are forgotten, and the persisted
// counters and pause are applied. Nothing is dispatched and no event is
// emitted.
func (b *Broker) FinishRestore(now time.Time, st RestoreState) (RestoreSummary, error) {
	var sum RestoreSummary
	if len(b.sessions) > 0 {
		return sum, fmt.Errorf("finish restore: %w: %d workers registered already, want to restore before any registers", ErrRestore, len(b.sessions))
	}
	t := ns(now)
	if last := st.Counters.LastID; last > JobID(b.jobs.n) {
		if last > maxRestoreID {
			return sum, fmt.Errorf("finish restore: %w: last job id %d out of range, want at most %d", ErrRestore, last, maxRestoreID)
		}
		b.skipTo(int(last))
	}
	sum.Queued, sum.Dispatched, sum.Backoff = b.count[Queued], b.count[Dispatched], b.count[Backoff]
	sum.Done, sum.Failed = b.count[Done], b.count[Failed]

	// Queues in the order jobs were queued, across classes and hosts.
	var queued []*job
	for _, c := range b.classAll {
		for j := c.queue.head; j != nil; j = c.queue.next(&b.jobs, j) {
			queued = append(queued, j)
		}
	}
	byTime := func(x, y *job) int { return cmp.Or(cmp.Compare(x.updated, y.updated), cmp.Compare(x.id, y.id)) }
	slices.SortFunc(queued, byTime)
	for _, c := range b.classAll {
		c.queue = jobList{}
		if c.capable == 0 {
			c.unrtAt = t
		}
	}
	for _, h := range b.hosts {
		b.refresh(h, t)    // restored dispatched jobs count as in flight
		h.waitShown = true // no event from a restore
	}
	for _, j := range queued {
		b.seq++
		j.seq = b.seq
		b.classOf(j).queue.push(j) // unrt already counts it (class.push in Restore)
		b.laneAdd(j, t)
	}

	// Host back-offs, from the retry times of their jobs.
	byUpdated := func(x, y *job) int { return cmp.Or(cmp.Compare(x.updated, y.updated), cmp.Compare(x.id, y.id)) }
	hosts := make([]*host, 0, len(b.hosts))
	for _, h := range b.hosts {
		if h.backoff.n > 0 {
			hosts = append(hosts, h)
		}
	}
	slices.SortFunc(hosts, func(x, y *host) int { return strings.Compare(x.name, y.name) })
	for _, h := range hosts {
		var js []*job
		until := b.restoreUntil[h]
		for j := h.backoff.head; j != nil; j = h.backoff.next(&b.jobs, j) {
			js = append(js, j)
		}
		if until == 0 {
			until = t // no retry time persisted: wake at the first tick
		}
		slices.SortFunc(js, byUpdated)
		h.backoff = jobList{}
		h.until, h.forgiveAt = until, until+int64(b.cfg.BackoffForgive)
		for _, j := range js {
			h.backoff.push(j)
			b.setRetryHost(j)
		}
		h.level, h.throttles = max(h.level, 1), max(h.throttles, 1)
		b.thr[h] = struct{}{}
		// Due at its end, even when that has passed: Tick then wakes its jobs.
		h.due = until
		if h.heapIdx >= 0 {
			heap.Fix(&b.heap, int(h.heapIdx))
		} else {
			heap.Push(&b.heap, h)
		}
	}
	b.restoreUntil = nil

	// Finished jobs in the order they finished; retention as usual.
	relink := func(l *jobList) {
		var js []*job
		for j := l.head; j != nil; j = l.next(&b.jobs, j) {
			js = append(js, j)
		}
		slices.SortFunc(js, byUpdated)
		*l = jobList{}
		for _, j := range js {
			l.push(j)
		}
	}
	relink(&b.dones)
	relink(&b.fails)
	b.retain()
	// IDs without a record are jobs whose records are gone: done records
	// forgotten beyond the retention before the restart, or done and
	// failed records the store swept after their TTL. They count as
	// forgotten done jobs, so that the states still add up to the jobs
	// submitted.
	gaps := b.jobs.n - b.paged // queued jobs left in the store (RestorePaged) have no record either
	for st := Queued; st < nStates; st++ {
		gaps -= b.count[st]
	}
	b.count[Done] += gaps
	b.forgot += gaps
	sum.Forgotten = b.forgot

	// Counters and pause.
	c := st.Counters
	b.dispatches, b.completions, b.failures, b.throttles, b.orphans = c.Dispatches, c.Completions, c.Failures, c.Throttles, c.Orphans
	b.paused = c.Paused

	if !b.restoreClean {
		b.restoredLast = JobID(b.jobs.n)
	}
	for _, w := range b.wsorted {
		if !isPlaceholder(w) {
			continue
		}
		w.since = t
		sum.Workers = append(sum.Workers, w.id)
		for _, j := range w.held {
			sum.Reclaim = append(sum.Reclaim, j.jobID())
		}
	}
	slices.Sort(sum.Reclaim)
	return sum, nil
}

// Reclaiming reports whether job jid is a restored dispatched job still
// waiting for its worker to reclaim it, and which worker that is.
func (b *Broker) Reclaiming(jid JobID) (string, bool) {
	j := b.jobs.get(jid)
	if j == nil || j.state != Dispatched || !isPlaceholder(b.workerOf(j)) {
		return "", false
	}
	return b.workerOf(j).id, true
}

// EndReclaim ends the reclaim wait: every restored job still dispatched to
// a worker that has not reconnected is requeued uncharged (the coordinator
// failed, not the job), with why in its history, and the placeholder
// records are dropped. jobs lists the restored dispatched jobs
// (RestoreSummary.Reclaim): it also finds those whose placeholder an
// operator evicted meanwhile. Jobs reclaimed, requeued or finished
// meanwhile are left alone. It returns how many jobs went back.
func (b *Broker) EndReclaim(now time.Time, jobs []JobID, why string) int {
	t := ns(now)
	n := 0
	requeue := func(j *job) {
		w := b.workerOf(j)
		b.release(j, t)
		b.endAttempt(j, "requeued", why)
		b.emit(admin.Event{At: now, Kind: admin.EventJobRequeued, JobID: uint64(j.id), URL: b.url(j), Worker: w.id, Detail: why})
		b.place(j, t, now)
		n++
	}
	for _, jid := range jobs {
		if j := b.jobs.get(jid); j != nil && j.state == Dispatched && isPlaceholder(b.workerOf(j)) {
			requeue(j)
		}
	}
	for i := 0; i < len(b.wsorted); {
		w := b.wsorted[i]
		if !isPlaceholder(w) {
			i++
			continue
		}
		held := slices.Clone(w.held)
		slices.SortFunc(held, func(x, y *job) int { return cmp.Compare(x.id, y.id) })
		for _, j := range held {
			requeue(j)
		}
		b.dropRecord(w) // removes it from wsorted
	}
	if n > 0 {
		b.emit(admin.Event{At: now, Kind: admin.EventBrokerReclaimEnded, Detail: strconv.Itoa(n) + " unreclaimed jobs requeued uncharged: " + why})
	}
	return n
}
