package broker

import (
	"strconv"
	"time"

	"drover/admin"
	"drover/coord/id"
)

// Unrecorded dispatches (issue 14). A durable coordinator does not make a
// JOB wait for the fsync of its dispatch record (net/server): a JOB leaves
// as soon as every earlier record of its job is durable. So a crash can
// lose a dispatch that a worker received: the store shows the job at
// attempt K (queued, in back-off, or dispatched to the worker of attempt
// K) while a worker runs attempt K+1. Never more than one: attempt K+2
// would have waited for the record of K+1.
//
// A restore therefore marks every job that was not finished: attempt K+1
// may be out there (jobUnrec). Then, for such a job:
//
//   - a worker that says HELLO listing run (job, K+1) gets it adopted: the
//     run goes on as the job's current attempt, on that worker, and the
//     history records it (the attempt K it superseded, if the job was
//     still dispatched, ends "requeued", and its worker, if connected, is
//     told CANCEL);
//   - otherwise the job's next dispatch skips attempt K+1: the history
//     records it as "skipped" by no worker, and the dispatch is attempt
//     K+2 (Assignment.AfterRestore: its JOB waits until it is durable, so a
//     second crash cannot skip to K+2 again). A worker that re-announces
//     the skipped run later is told to drop it, and the skipped entry
//     names it. No (job, attempt) ever names two runs.

// RestoreClean tells a restore, before its first record, that the records
// come from a clean shutdown: every dispatch was recorded and every worker
// told before the store was closed, so no attempt may be running
// unrecorded, and none is adopted or skipped as above.
func (b *Broker) RestoreClean() { b.restoreClean = true }

// OutcomeSkipped is the outcome of an attempt number a restart skipped: the
// attempt may have been dispatched before the restart without being
// recorded, so it is never given out again.
const OutcomeSkipped = "skipped"

// SessionRun is a run of a live worker session.
type SessionRun struct {
	Session id.Session
	Run     Run
}

// skipUnrecorded skips the attempt number a restart may have lost, before
// j's first dispatch since: it reports whether it did.
func (b *Broker) skipUnrecorded(j *job, t int64) bool {
	if !j.has(jobUnrec) {
		return false
	}
	j.setFlag(jobUnrec, false)
	b.countAttempt(j)
	b.addAttempt(j, "", t, b.cfg.HistoryLimit)
	b.endAttempt(j, OutcomeSkipped, "may have been dispatched before the coordinator restarted, unrecorded: never given out again")
	return true
}

// adoptUnrecorded adopts run r for worker nw when it is the attempt a
// restart may have lost (see above); it reports whether it did.
func (b *Broker) adoptUnrecorded(now time.Time, t int64, nw *worker, r Run) bool {
	j := b.jobs.get(r.Job)
	if j == nil || !j.has(jobUnrec) || r.Attempt != int(b.jobAttempts(j))+1 {
		return false
	}
	switch j.state {
	case Queued:
		b.unqueue(j)
	case Backoff:
		b.unwait(j) // its host's back-off, or its retry delay (retry.go)
		if b.retryAt(j) != 0 {
			b.setRetryAt(j, 0)
		}
	case Dispatched:
		// The later attempt proves this one ended before the crash.
		w := b.workerOf(j)
		b.release(j, t)
		b.endAttempt(j, "requeued", "superseded by attempt "+strconv.Itoa(r.Attempt)+" on "+nw.id+", dispatched before the coordinator restarted")
		if w != nw && !isPlaceholder(w) && !w.lost {
			b.superseded = append(b.superseded, SessionRun{Session: w.session, Run: Run{Job: j.jobID(), Attempt: int(b.jobAttempts(j))}})
			b.syncReady(w)
			defer b.closeIfDrained(now, w)
		}
	default:
		return false
	}
	j.setFlag(jobUnrec, false)
	b.setState(j, Dispatched, t)
	b.hold(nw, j, t)
	b.countAttempt(j)
	b.addAttempt(j, nw.id, t, b.cfg.HistoryLimit)
	b.dispatches++
	b.emit(admin.Event{At: now, Kind: admin.EventJobReconciled, JobID: uint64(j.id), URL: b.url(j), Worker: nw.id,
		Detail: "adopted attempt " + strconv.Itoa(r.Attempt) + ": dispatched before the coordinator restarted, not recorded"})
	return true
}

// nameSkipped records, in the history entry of a skipped attempt, the
// worker that re-announced it: the run happened, on that worker, before the
// restart. The worker is told to drop it (a later attempt is current).
func (b *Broker) nameSkipped(now time.Time, wid string, r Run) {
	j := b.jobs.get(r.Job)
	if j == nil {
		return
	}
	h := b.hist(j)
	i := len(h) - 1 - (int(b.jobAttempts(j)) - r.Attempt)
	if r.Attempt < 1 || i < 0 || i >= len(h) {
		return
	}
	a := &h[i]
	if a.worker != "" || a.outcome != OutcomeSkipped {
		return
	}
	a.worker = wid
	a.err = "ran on " + wid + " before the coordinator restarted, unrecorded; dropped when it re-announced it"
	b.emit(admin.Event{At: now, Kind: admin.EventJobReconciled, JobID: uint64(j.id), URL: b.url(j), Worker: wid,
		Detail: "skipped attempt " + strconv.Itoa(r.Attempt) + " re-announced: dropped"})
}

// TakeSuperseded appends to dst the runs of connected workers that an
// adopted unrecorded attempt superseded since the last call: each must be
// told CANCEL.
func (b *Broker) TakeSuperseded(dst []SessionRun) []SessionRun {
	dst = append(dst, b.superseded...)
	clear(b.superseded)
	b.superseded = b.superseded[:0]
	return dst
}
