package broker

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"drover/admin"
	"drover/coord/id"
)

// The broker's error kinds; test them with errors.Is or the IsX helpers.
var (
	// ErrUnknownWorker: no worker has that id.
	ErrUnknownWorker = errors.New("unknown worker")
	// ErrUnknownJob: no job has that id.
	ErrUnknownJob = errors.New("unknown job")
	// ErrWrongState: the command does not apply in the target's state.
	ErrWrongState = errors.New("wrong state")
	// ErrBadOutcome: the outcome kind is not one of OK, Internal, External,
	// Throttled.
	ErrBadOutcome = errors.New("bad outcome")
	// ErrJobIDsExhausted: every job ID up to Config.LastJobID was given,
	// so no job can be added (CheckIDs).
	ErrJobIDsExhausted = errors.New("job IDs exhausted")
)

// IsUnknown reports whether err names an unknown worker or job.
func IsUnknown(err error) bool {
	return errors.Is(err, ErrUnknownWorker) || errors.Is(err, ErrUnknownJob)
}

// IsWrongState reports whether err is (or wraps) ErrWrongState.
func IsWrongState(err error) bool { return errors.Is(err, ErrWrongState) }

// Dispatch fills free worker slots and appends the decisions to dst. Ready
// workers are served least recently used first; each gets the head job of
// the next lane in turn (polite.go: hosts take turns, oldest first across
// header classes) among the classes it satisfies, passing over a job that
// just failed on it while another ready worker could take it (retry.go),
// then moves to the back of the order. A worker never gets more jobs than
// its free slots, and no host more than its limits allow. Nothing is
// dispatched while paused.
func (b *Broker) Dispatch(now time.Time, dst []Assignment) []Assignment {
	if b.paused {
		return dst
	}
	b.dropIdleTrees()
	t := ns(now)
	b.wake(t, now)
	misses := 0
	passed := false // a worker passed over a job that failed on it: it may take it once others are full
	for w := b.ready.head; w != nil && b.count[Queued]-b.unrt > 0 && misses < b.ready.n; {
		next := w.link.next
		l, j, avoided := b.pick(w) // retry.go: nextLane(w)'s head, unless it just failed on w
		if j == nil {
			passed = passed || avoided
			misses++
			if next == nil {
				break
			}
			w = next
			continue
		}
		misses = 0
		b.unqueue(j)
		if l.inRing && l.class.ring.tail != l { // its host's turn is over
			l.class.ring.remove(l)
			l.class.ring.push(l)
		}
		if !b.admit(j, t, now) { // budget.go: parked or failed
			continue // the same worker, the next job
		}
		b.setState(j, Dispatched, t)
		robots := b.robotsFor(j, w, t) // robots.go: before hold, which may park a probed host
		b.hold(w, j, t)
		skipped := b.skipUnrecorded(j, t) // unrecorded.go
		b.countAttempt(j)
		b.addAttempt(j, w.id, t, b.cfg.HistoryLimit)
		b.dispatches++
		b.useSeq++
		w.lastUsed = b.useSeq
		b.ready.remove(w)
		if w.free() > 0 {
			b.ready.insert(w) // at the back: it is now the most recently used
		}
		spec := b.spec(j)
		dst = append(dst, Assignment{Session: w.session, Worker: w.id, Job: j.jobID(), Spec: spec, Attempt: int(b.jobAttempts(j)), AfterRestore: skipped, Robots: robots})
		b.emit(admin.Event{At: now, Kind: admin.EventJobDispatched, JobID: uint64(j.id), URL: spec.Key.URL, Worker: w.id})
		if !j.has(jobFree) {
			b.dispatched(b.hostOf(j), t)
		}
		if next == nil || passed {
			next, passed = b.ready.head, false
		}
		w = next
	}
	return dst
}

// reorder applies change, which alters j's place in the sort k, keeping
// that index (when built).
func (b *Broker) reorder(j *job, k sortKey, change func()) {
	tr := b.trees[k]
	if tr != nil {
		tr.remove(j)
	}
	change()
	if tr != nil {
		tr.insert(j)
	}
}

// countAttempt adds one to a job's attempts, keeping the attempts index.
func (b *Broker) countAttempt(j *job) {
	tr := b.trees[sortAttempts]
	if tr != nil {
		tr.remove(j)
	}
	b.moreFor(j).attempts++
	if tr != nil {
		tr.insert(j)
	}
}

// countFailure adds one to a job's failures, keeping the failures index.
func (b *Broker) countFailure(j *job) {
	tr := b.trees[sortFailures]
	if tr != nil {
		tr.remove(j)
	}
	b.moreFor(j).failures++
	if tr != nil {
		tr.insert(j)
	}
}

// nextLane returns the lane w takes its next job from: among the classes
// w satisfies, the front lane of the ring whose front lane's head job is
// oldest; nil when none has a job w may take now.
func nextLane(w *worker) *lane {
	var best *lane
	for _, c := range w.classes {
		if l := c.ring.head; l != nil && (best == nil || l.q.head.seq < best.q.head.seq) {
			best = l
		}
	}
	return best
}

// Run names one attempt of one job: the attempt number is the job's
// fencing token. A worker holds runs, not jobs: after a requeue the same
// job may come back to it as a new attempt while the old one winds down.
type Run struct {
	Job     JobID
	Attempt int
}

// ResultStatus says what the broker did with a worker's result.
type ResultStatus uint8

// The result statuses (the wire's RESULT-OK statuses, with Again split
// from Recorded so that the caller submits a result's links only once).
const (
	Recorded ResultStatus = iota + 1 // the current attempt's result: applied
	Again                            // this worker's result for this attempt was recorded before: nothing changed
	Stale                            // not the job's current attempt on this worker: ignored, counted
	Unknown                          // no job ever had this ID: ignored, counted
)

var resultStatusNames = [...]string{"", "recorded", "again", "stale", "unknown"}

// String names the status.
func (s ResultStatus) String() string {
	if int(s) < len(resultStatusNames) && s > 0 {
		return resultStatusNames[s]
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// Result applies a worker's outcome for run r (job and attempt) reported
// by session s. Only the current attempt of a job dispatched to this
// session's worker is applied (Recorded). The same worker's result for an
// attempt whose result was recorded before is Again (nothing changes: the
// worker re-sent it). Any other result is Stale (another attempt, a job
// taken back, finished or forgotten) or Unknown (no job ever had the ID):
// ignored, counted (Totals.StaleResults) and reported as a
// job.stale-result event. A bad outcome kind changes nothing and is an
// error.
func (b *Broker) Result(now time.Time, s id.Session, r Run, o Outcome) (ResultStatus, error) {
	jid := r.Job
	if o.Kind > Throttled {
		return 0, fmt.Errorf("result for job %d attempt %d from session %d: %w: kind %d, want ok, internal, external or throttled", jid, r.Attempt, s, ErrBadOutcome, o.Kind)
	}
	w := b.sessions[s]
	j := b.jobs.get(jid)
	if w == nil || j == nil || j.state != Dispatched || b.workerOf(j) != w || int(b.jobAttempts(j)) != r.Attempt {
		st, why := b.notCurrent(w, j, r)
		if st == Again {
			return Again, nil
		}
		b.orphans++
		detail := "session " + strconv.FormatUint(uint64(s), 10) + " attempt " + strconv.Itoa(r.Attempt) + ": " + why
		b.emit(admin.Event{At: now, Kind: admin.EventJobOrphanResult, JobID: uint64(jid), Detail: detail})
		return st, nil
	}
	t := ns(now)
	b.release(j, t)
	b.endAttempt(j, o.Kind.String(), o.Error)
	if o.Error != "" {
		b.setLastError(j, o.Error)
	}
	b.proven(w)
	switch o.Kind {
	case OK:
		defer b.retain()
		w.done++
		b.completions++
		b.setPayload(j, nil) // no longer needed: a done job cannot be requeued
		b.setState(j, Done, t)
		b.dones.push(j)
		b.finished = append(b.finished, Finished{Job: j.jobID(), Key: b.key(j), FP: j.fp, Output: o.Output, Attempt: int(b.jobAttempts(j)), Worker: w.id, At: now})
		b.emit(admin.Event{At: now, Kind: admin.EventJobDone, JobID: uint64(j.id), Key: j.fp.String(), URL: b.url(j), Worker: w.id})
	case Internal:
		w.failures++
		b.failures++
		b.countFailure(j)
		if int(b.jobFailures(j)) >= b.cfg.MaxRequestFailures {
			b.fail(j, t, now, "internal failure "+strconv.Itoa(int(b.jobFailures(j)))+" of "+strconv.Itoa(b.cfg.MaxRequestFailures)+": "+o.Error)
		} else {
			d := b.retryLater(j, t, now)
			b.emit(admin.Event{At: now, Kind: admin.EventJobRetry, JobID: uint64(j.id), URL: b.url(j), Worker: w.id, Detail: o.Error + retryNote(d)})
		}
	case External:
		w.failures++
		b.failures++
		b.fail(j, t, now, "external failure: "+o.Error)
	case Throttled:
		b.throttles++
		b.reorder(j, sortThrottles, func() { b.moreFor(j).throttles++ })
		b.throttle(j, o.RetryAfter, t, now)
	}
	b.syncReady(w)
	b.closeIfDrained(now, w)
	return Recorded, nil
}

// notCurrent classifies a result that is not for a running current
// attempt of the session's worker: Again when that worker's result for
// that attempt was recorded before, Unknown when no job ever had the ID,
// else Stale; why says what the broker knows instead.
func (b *Broker) notCurrent(w *worker, j *job, r Run) (ResultStatus, string) {
	switch {
	case j == nil && (r.Job == 0 || r.Job > JobID(b.jobs.n)):
		return Unknown, "no such job"
	case j == nil && b.handed > 0:
		return Stale, "job finished and forgotten, or handed back to the shared queue"
	case j == nil:
		return Stale, "job finished and forgotten"
	case w == nil:
		return Stale, "session is no registered worker"
	}
	if a, ok := b.attemptEntry(j, r.Attempt); ok && a.worker == w.id && resultOutcome(a.outcome) {
		return Again, ""
	}
	switch {
	case r.Attempt != int(b.jobAttempts(j)):
		return Stale, "current attempt is " + strconv.Itoa(int(b.jobAttempts(j)))
	case j.state != Dispatched:
		return Stale, "job is " + j.state.String()
	default:
		return Stale, "job is held by worker " + b.workerOf(j).id
	}
}

// Holds reports whether session s's worker runs run r now (its current
// attempt, dispatched to it).
func (b *Broker) Holds(s id.Session, r Run) bool {
	w := b.sessions[s]
	j := b.jobs.get(r.Job)
	return w != nil && j != nil && j.state == Dispatched && b.workerOf(j) == w && int(b.jobAttempts(j)) == r.Attempt
}

// fail moves a job (in no list) to failed for good.
func (b *Broker) fail(j *job, t int64, now time.Time, why string) {
	b.setLastError(j, why)
	b.setState(j, Failed, t)
	if b.retryAt(j) != 0 {
		b.setRetryAt(j, 0)
	}
	b.fails.push(j)
	var last string // the worker of its last attempt
	if h := b.hist(j); len(h) > 0 {
		last = h[len(h)-1].worker
	}
	b.finished = append(b.finished, Finished{Job: j.jobID(), Key: b.key(j), FP: j.fp, Failed: true, Error: why, Attempt: int(b.jobAttempts(j)), Worker: last, At: now})
	b.emit(admin.Event{At: now, Kind: admin.EventJobFailed, JobID: uint64(j.id), Key: j.fp.String(), URL: b.url(j), Detail: why})
}

// Requeue puts one job back in the queue now, keeping its counters: a failed
// job gets another try, a job in back-off skips its host's back-off, a
// dispatched job is taken from its worker uncharged (the worker's eventual
// result is stale). A queued job stays as it is; a done job cannot be
// requeued.
func (b *Broker) Requeue(now time.Time, jid JobID) error {
	j := b.jobs.get(jid)
	if j == nil {
		return fmt.Errorf("requeue job %d: %w", jid, ErrUnknownJob)
	}
	t := ns(now)
	switch j.state {
	case Queued:
		return nil
	case Done:
		return fmt.Errorf("requeue job %d: %w: it is done, want failed, backoff, queued or dispatched", jid, ErrWrongState)
	case Failed:
		b.fails.remove(&b.jobs, j)
	case Backoff:
		b.unwait(j)
	case Dispatched:
		w := b.workerOf(j)
		b.release(j, t)
		b.endAttempt(j, "requeued", "taken back by the operator")
		b.syncReady(w)
		defer b.closeIfDrained(now, w)
	}
	b.setState(j, Queued, t)
	if b.retryAt(j) != 0 {
		b.setRetryAt(j, 0)
	}
	b.emit(admin.Event{At: now, Kind: admin.EventJobRequeued, JobID: uint64(j.id), Key: j.fp.String(), URL: b.url(j), Detail: "operator"})
	b.enqueue(j, t)
	return nil
}

// RequeueFailed requeues every failed job (see Requeue) and returns how many.
func (b *Broker) RequeueFailed(now time.Time) int {
	n := 0
	for b.fails.head != nil {
		if err := b.Requeue(now, b.fails.head.jobID()); err != nil {
			break // cannot happen: every job on the list is failed
		}
		n++
	}
	return n
}
