package broker

import (
	"fmt"
	"time"
)

// Paging (issue 21, store.resident_jobs): queued jobs beyond what the
// coordinator keeps in memory live only in its store. The broker's side is
// narrow: PageOut drops a queued job's record from memory, PageIn takes a
// persisted queued record back, and both keep the job counted as queued
// (Totals.Queued, PagedOut), so the per-state totals still add up to the
// jobs submitted. Which jobs go out and come back, and when, is the
// caller's: it pages out the youngest queued jobs once their records are
// durable, and pages the oldest back in, in ID order, before the queues run
// dry.
//
// A paged-out job is in no index: the console's job lists and Job do not
// see it, dispatch does not consider it, and a result naming it is stale.
// Its position in its host's job list is left empty (ID 0); PageIn gives
// it a new one at the end of the list.

// PageOut takes queued job jid out of memory: its record leaves every index
// and is forgotten, and it counts as a paged-out queued job until PageIn
// brings it back. Only a job waiting in its queue can go: not one in
// back-off, dispatched, finished, or of a paused crawl (parked or about to
// be). The caller must hold the job's current record in its store. It
// reports whether the job was paged out.
func (b *Broker) PageOut(jid JobID) bool {
	j := b.jobs.get(jid)
	if j == nil || j.state != Queued {
		return false
	}
	if bg := b.budgets[b.crawler(j)]; bg != nil && (bg.paused || bg.cancelled) {
		return false
	}
	b.paged++
	b.dropQueued(j)
	return true
}

// dropQueued takes queued job j out of its queue and every index and
// forgets its record (PageOut, HandBack): it leaves the queued count, and
// the caller counts it where it went.
func (b *Broker) dropQueued(j *job) {
	b.unqueue(j)
	b.count[Queued]--
	b.age.move(j.jobID(), Queued, 0)
	h := b.hostOf(j)
	h.idx.add(int(j.hostPos), Queued, -1)
	h.ids.clear(int(j.hostPos))
	for _, tr := range b.trees {
		if tr != nil {
			tr.remove(j)
		}
	}
	b.byKey.del(j.fp, j.jobID())
	b.changes++
	b.forget(j)
	b.compactHost(h)
}

// compactHost drops the positions of host h's job list that no job holds
// any more (its jobs forgotten or paged out) once they are most of it, so
// that the list grows with the host's jobs in memory, not with every job
// it ever had (issue 21). The jobs left keep their order; their positions
// change, and the per-state counts over them are counted again. A list
// is rebuilt after at least half its positions emptied: O(1) a removal.
func (b *Broker) compactHost(h *host) {
	if h.idx.lv == nil {
		return // every position is below 64 (countIdx): a short list
	}
	live := h.idx.total(allStates)
	if h.ids.len() < 1024 || live*2 >= h.ids.len() {
		return
	}
	ids := withRoom(max(live+live/4, 16))
	var idx countIdx
	for jid := range h.ids.all() {
		j := b.jobs.get(jid) // nil for 0 (paged out) and for forgotten jobs
		if j == nil {
			continue
		}
		j.hostPos = int32(ids.len())
		idx.add(ids.len(), j.state, 1)
		ids.push(jid)
	}
	h.ids, h.idx = ids, idx
}

// PageIn takes back a queued job's persisted record, paged out before (or
// left in the store by a restore: RestorePaged): the job enters its queue
// at the back (FIFO order is the order of PageIn calls, so call it in ID
// order), or its host's back-off when the host is held, exactly as a
// requeued job would, and stops counting as paged out. It is an error for
// a record that is not queued, names an ID never allocated, or a job the
// broker holds.
func (b *Broker) PageIn(now time.Time, r *JobRecord) error {
	switch {
	case r.State != Queued:
		return fmt.Errorf("page in job %d: state %s, want queued", r.ID, r.State)
	case r.ID == 0 || int(r.ID) > b.jobs.n:
		return fmt.Errorf("page in job %d: no such job ID (the last allocated is %d)", r.ID, b.jobs.n)
	case b.jobs.get(r.ID) != nil:
		return fmt.Errorf("page in job %d: the job is in memory already", r.ID)
	case b.paged == 0:
		return fmt.Errorf("page in job %d: no job is paged out", r.ID)
	case r.Attempts < 0 || r.Failures < 0 || r.Throttles < 0 || r.Attempts > 1<<30 || r.Failures > 1<<30 || r.Throttles > 1<<30:
		return fmt.Errorf("page in job %d: counters attempts %d, failures %d, throttles %d, want 0..2^30", r.ID, r.Attempts, r.Failures, r.Throttles)
	}
	t := ns(now)
	j := b.jobs.revive(r.ID)
	j.id = uint32(r.ID)
	h := b.fillFromRecord(j, r)
	j.hostPos = int32(h.ids.len())
	h.ids.push(j.jobID())
	b.byKey.set(r.FP, j.jobID())
	j.state = Queued
	// A restored job may have an unrecorded attempt (unrecorded.go): so
	// may one paged in (a job paged out since had a durable record, but
	// the restore's doubt about it stays).
	j.setFlag(jobUnrec, r.ID <= b.restoredLast)
	b.paged--
	b.count[Queued]++
	b.age.move(j.jobID(), 0, Queued)
	h.idx.add(int(j.hostPos), Queued, 1)
	b.changes++
	for _, tr := range b.trees {
		if tr != nil {
			tr.insert(j)
		}
	}
	b.place(j, t, now)
	return nil
}

// RestorePaged counts n queued jobs a restore left in the store instead of
// passing them to Restore: they count as queued (not as forgotten done
// jobs) and come back with PageIn. Call it before FinishRestore.
func (b *Broker) RestorePaged(n int) error {
	if n < 0 {
		return fmt.Errorf("restore %d paged-out jobs: %w: want >= 0", n, ErrRestore)
	}
	b.paged += n
	return nil
}

// PagedOut is the number of queued jobs paged out of memory.
func (b *Broker) PagedOut() int { return b.paged }

// YoungestQueued appends to dst the IDs of up to n queued jobs, youngest
// (highest ID) first: the candidates for PageOut.
func (b *Broker) YoungestQueued(n int, dst []JobID) []JobID {
	total := b.count[Queued]
	if n <= 0 || total == 0 {
		return dst
	}
	b.age.idx.scan(&b.age, 1<<Queued, total-1, -1, n, func(j JobID) { dst = append(dst, j) })
	return dst
}

// revive makes the record of ID j, forgotten before, live again and
// returns it (zeroed), allocating its chunk when it was released.
func (s *jobStore) revive(j JobID) *job {
	i := int(j - 1)
	c := i >> chunkBits
	if s.chunks[c] == nil {
		s.chunks[c] = s.newChunk()
	}
	s.alive[c]++
	return &s.chunks[c][i&(chunkSize-1)]
}
