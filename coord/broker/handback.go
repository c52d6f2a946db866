package broker

import (
	"time"

	"drover/admin"
	"drover/coord/id"
)

// Hand-back (issue 19): on a queue shared by several coordinators, the
// jobs a coordinator claimed wait in its broker for its own workers. When
// it has none left that may take a job (the last one evicted, lost,
// drained or held back), those jobs would wait there while other
// coordinators' workers sit idle; the coordinator hands them back to the
// shared queue instead. HandBack is the broker's side: the jobs leave it
// for good, neither finished nor failed (no Finished, no result, no
// count of done or failed), as if they had never been submitted here.

// A HandedBack job left the broker for the shared queue (HandBack).
type HandedBack struct {
	Key id.Key
	FP  id.Fingerprint
	// Ran: the job was dispatched here at least once (its worker may
	// have fetched its page before it was lost).
	Ran bool
	// Unroutable: no live worker here has the headers it needs (it was
	// handed back for that, not for want of any worker).
	Unroutable bool
}

// HasTaker reports whether a live worker may be given a job now: one
// not draining, not lost, not held back after early deaths (busy or
// not). O(1) while a worker has a free slot; else a scan of the
// sessions up to the first such worker.
func (b *Broker) HasTaker() bool {
	if b.ready.head != nil {
		return true // in the ready list: takes jobs, a free slot, not held
	}
	for _, w := range b.sessions {
		if w.takesJobs() && w.heldUntil == 0 {
			return true
		}
	}
	return false
}

// HandBack takes every job waiting in its queue (state queued, not of a
// paused or cancelled crawl) out of the broker and appends it to dst:
// its record leaves every index and is forgotten, it is no longer
// counted in any state (HandedBackJobs counts it), and a result naming it
// is stale. Jobs in back-off or a retry delay stay (a later call takes
// them once they are queued again), as do dispatched ones. Each job
// gets a job.requeued event with detail why.
func (b *Broker) HandBack(now time.Time, why string, dst []HandedBack) []HandedBack {
	return b.handBack(now, why, dst, false)
}

// HandBackUnroutable is HandBack for the jobs no live worker can take
// (Totals.Unroutable: no worker that is not draining has the headers
// they need), marked Unroutable.
func (b *Broker) HandBackUnroutable(now time.Time, why string, dst []HandedBack) []HandedBack {
	if b.unrt == 0 {
		return dst
	}
	return b.handBack(now, why, dst, true)
}

// Routable reports whether a live worker that is not draining has the
// headers a job needs (Match): a job submitted with them would not be
// unroutable.
func (b *Broker) Routable(headers map[string]string) bool {
	return b.classFor(headers).capable > 0
}

// handBack hands back the queued jobs of every class, or with unrt of
// the classes no live worker matches (the jobs marked Unroutable).
func (b *Broker) handBack(now time.Time, why string, dst []HandedBack, unrt bool) []HandedBack {
	var js []*job
	for _, c := range b.classAll {
		if c.queue.n == 0 || unrt && c.capable > 0 {
			continue
		}
		for j := c.queue.head; j != nil; j = c.queue.next(&b.jobs, j) {
			if bg := b.budgets[b.crawler(j)]; bg != nil && (bg.paused || bg.cancelled) {
				continue
			}
			js = append(js, j)
		}
	}
	for _, j := range js {
		dst = append(dst, HandedBack{Key: b.key(j), FP: j.fp, Ran: b.jobAttempts(j) > 0, Unroutable: unrt})
		b.emit(admin.Event{At: now, Kind: admin.EventJobRequeued, JobID: uint64(j.id), URL: b.url(j), Detail: why})
		b.countCrawl(j, Queued, 0)
		b.handed++
		b.dropQueued(j)
	}
	return dst
}

// HandedBackJobs counts the jobs HandBack took out of the broker.
func (b *Broker) HandedBackJobs() int { return b.handed }
