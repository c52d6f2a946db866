package broker

import (
	"container/heap"
	"strconv"
	"time"

	"drover/admin"
	"drover/backoff"
)

// The retry policy (docs/PROTOCOL.md §6.14, "Retry delay").
//
// A job charged a failure that leaves budget (an internal outcome, or the
// charged death of its worker) is not queued at once: it waits its retry
// delay in state backoff, RetryStart doubling per failure charged so far
// (backoff.Policy with n = failures), capped at RetryCap and spread by
// ±RetryJitter, then is queued again (event job.woken). A job whose host
// backs off meanwhile then waits for the host as usual.
//
// Once queued, the job prefers another worker than the one its last
// attempt failed on: that worker passes over it while another ready
// (live, not draining, not held back, free slots) worker could take it.
// A worker looks past at most avoidScan such jobs at the head of a lane
// (one host's jobs of a header class, polite.go); with none other ready,
// it takes the job itself.
//
// Jobs waiting a retry delay are in a heap by retry time (jobMore.rpos), not
// in their host's back-off list. They are persisted as state queued with
// their retry time (Record), and Restore puts a queued record with a retry
// time back in the wait, so a restart keeps the delay and never mistakes
// it for a host back-off.

// avoidScan bounds how many jobs a worker passes over at the head of one
// lane because they just failed on it.
const avoidScan = 32

// retryHeap orders the jobs waiting a retry delay by retry time, then ID.
// A job in it has a side record (it failed), which holds its position.
type retryHeap []retryEntry

// retryEntry is a job waiting its retry delay, with its side record.
type retryEntry struct {
	j *job
	m *jobMore
}

// Len implements heap.Interface.
func (q retryHeap) Len() int { return len(q) }

// Less implements heap.Interface.
func (q retryHeap) Less(i, j int) bool {
	if q[i].m.retryAt != q[j].m.retryAt {
		return q[i].m.retryAt < q[j].m.retryAt
	}
	return q[i].j.id < q[j].j.id
}

// Swap implements heap.Interface.
func (q retryHeap) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].m.rpos = int32(i + 1)
	q[j].m.rpos = int32(j + 1)
}

// Push implements heap.Interface.
func (q *retryHeap) Push(x any) {
	e := x.(retryEntry)
	e.m.rpos = int32(len(*q) + 1)
	*q = append(*q, e)
}

// Pop implements heap.Interface.
func (q *retryHeap) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = retryEntry{}
	*q = old[:len(old)-1]
	e.m.rpos = 0
	return e
}

// pushRetry puts j in the retry heap.
func (b *Broker) pushRetry(j *job) { heap.Push(&b.retry, retryEntry{j, b.moreFor(j)}) }

// removeRetry takes j, which waits its retry delay, out of the retry heap.
func (b *Broker) removeRetry(j *job) { heap.Remove(&b.retry, int(b.moreOf(j).rpos-1)) }

// retrying reports whether j waits its retry delay.
func (b *Broker) retrying(j *job) bool { return j.more != 0 && b.mores.at(j.more).rpos > 0 }

// retryDelay is the wait before the retry of a job charged its n-th
// failure; 0 when retries are immediate (RetryStart < 0).
func (b *Broker) retryDelay(n int) time.Duration {
	if b.cfg.RetryStart < 0 {
		return 0
	}
	p := backoff.Policy{Start: b.cfg.RetryStart, Cap: b.cfg.RetryCap, Jitter: b.cfg.RetryJitter}
	return p.Delay(n, b.cfg.Rand.Float64)
}

// retryLater sends a job (in no list, charged a failure that left budget)
// to wait its retry delay, or queues it at once when the delay is 0. It
// returns the delay, for the caller's event.
func (b *Broker) retryLater(j *job, t int64, now time.Time) time.Duration {
	d := b.retryDelay(int(b.jobFailures(j)))
	if d <= 0 {
		b.place(j, t, now)
		return 0
	}
	b.setState(j, Backoff, t)
	b.setRetryAt(j, t+int64(d))
	b.pushRetry(j)
	return d
}

// retryNote is what an event's detail adds about a retry delay.
func retryNote(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return " (retry in " + d.Round(time.Millisecond).String() + ")"
}

// unwait takes a job in state backoff out of the list it waits in: its
// host's back-off, or the retry heap.
func (b *Broker) unwait(j *job) {
	if b.retrying(j) {
		b.removeRetry(j)
		return
	}
	b.hostOf(j).backoff.remove(&b.jobs, j)
}

// wakeRetries queues the jobs whose retry delay ended by t.
func (b *Broker) wakeRetries(t int64, now time.Time) {
	for len(b.retry) > 0 && b.retry[0].m.retryAt <= t {
		j := heap.Pop(&b.retry).(retryEntry).j
		b.setState(j, Queued, t)
		b.emit(admin.Event{At: now, Kind: admin.EventJobWoken, JobID: uint64(j.id), URL: b.url(j), Detail: "retry delay ended"})
		b.place(j, t, now)
	}
}

// nextRetry is when the earliest retry delay ends (0 when none waits).
func (b *Broker) nextRetry() int64 {
	if len(b.retry) == 0 {
		return 0
	}
	return b.retry[0].m.retryAt
}

// retryReason is the reason shown for a job waiting its retry delay.
func (b *Broker) retryReason(j *job) string {
	return WaitRetry.text("after failure " + strconv.Itoa(int(b.jobFailures(j))) + " of " + strconv.Itoa(b.cfg.MaxRequestFailures) +
		" at " + b.retryTime(j).Format(time.RFC3339))
}

// avoids reports whether j's last attempt failed on w (an internal
// outcome, or w was lost running it), so that w passes it to another
// worker when one is ready.
func (b *Broker) avoids(j *job, w *worker) bool {
	if b.jobFailures(j) == 0 {
		return false
	}
	h := b.hist(j)
	if len(h) == 0 {
		return false
	}
	a := &h[len(h)-1]
	return (a.outcome == "internal" || a.outcome == "lost") && a.worker == w.id
}

// otherReady reports whether a ready worker other than w takes jobs of c.
func (b *Broker) otherReady(c *class, w *worker) bool {
	for o := b.ready.head; o != nil; o = o.link.next {
		if o == w {
			continue
		}
		for _, oc := range o.classes {
			if oc == c {
				return true
			}
		}
	}
	return false
}

// pick returns the job w takes next and its lane, or nil: the head of
// nextLane(w) (polite.go), unless that job just failed on w; then, for
// each class w satisfies, the head of the class's front lane, or when that
// job just failed on w while another ready worker could take it, the first
// job behind it in the lane that did not (at most avoidScan jobs past the
// head); the oldest of these. avoided reports that it found none only
// because it passed over jobs that failed on w: once other workers fill
// up, w may take them, so Dispatch serves the ready list from its head
// again.
func (b *Broker) pick(w *worker) (_ *lane, _ *job, avoided bool) {
	l := nextLane(w)
	if l == nil {
		return nil, nil, false
	}
	if !b.avoids(l.q.head, w) {
		return l, l.q.head, false
	}
	var bl *lane
	var best *job
	for _, c := range w.classes {
		l := c.ring.head
		if l == nil {
			continue
		}
		j := l.q.head
		if b.avoids(j, w) && b.otherReady(c, w) {
			for n := 0; j != nil && b.avoids(j, w); n++ {
				if n == avoidScan {
					j = nil
					break
				}
				j = l.q.next(&b.jobs, j)
			}
		}
		if j != nil && (best == nil || j.seq < best.seq) {
			bl, best = l, j
		}
	}
	return bl, best, best == nil
}

// readopt takes a job that a re-registering worker still runs (its current
// attempt) out of the queue or out of its retry delay.
func (b *Broker) readopt(j *job) {
	if b.retrying(j) {
		b.removeRetry(j)
		b.setRetryAt(j, 0)
		return
	}
	b.unqueue(j)
}
