package ledger

import (
	"cmp"
	"slices"
	"time"

	"drover/coord/id"
)

// One record of a queued key (issue 21). A queued key usually has a job,
// and the job keeps the key's fingerprint, names, URL and submit time for
// its whole life: the ledger's record would be a second copy of all of
// it. So the coordinator lends the key to its job: Lend frees the
// record, and the key's index slot names the job instead (a flagged job
// number); the ledger asks the job's holder (Jobs, the broker) for the
// key when it needs it (a probe, Lookup, the queued view). When the job
// is forgotten while its key is still queued (paged out), Reclaim takes a
// record back. The states and answers are those of a queued record: a
// change of representation, not of semantics.

// Jobs is the holder of the jobs queued keys are lent to (the broker). A
// job a key is lent to is kept until Reclaim is called for it.
type Jobs interface {
	// JobOf is the newest job of key fp, if it has one.
	JobOf(fp id.Fingerprint) (uint32, bool)
	// JobFP is the fingerprint of job j's key.
	JobFP(j uint32) id.Fingerprint
	// JobKey is job j's key and when it was submitted.
	JobKey(j uint32) (id.Key, time.Time)
	// Lent says that job j's key is lent to it: the ledger's index slot
	// names the job, so the holder need not index the key too (LentJob
	// answers for it).
	Lent(j uint32)
	// Returned says that job j, still kept, no longer holds its key (it
	// is done, or its record dropped): the holder indexes the key again.
	// Not called for Reclaim (the holder is forgetting the job).
	Returned(j uint32)
}

// lentBit flags an index slot that names a job, not a record: jobs
// numbered below it (LentMax) can be lent keys.
const lentBit = 1 << 31

// LentMax bounds the numbers of the jobs keys are lent to.
const LentMax = lentBit

// SetJobs sets the holder of the jobs Lend lends keys to; without one,
// Lend lends nothing.
func (l *Ledger) SetJobs(j Jobs) { l.jobs = j }

// Lend lends queued key fp to its job (Jobs.JobOf): the key's record is
// freed and its index slot names the job. It reports whether it did
// (false for a key that is not queued, is lent already, or whose job
// differs from the record: not the same submit time, or numbered past
// lentBit).
func (l *Ledger) Lend(fp id.Fingerprint) bool {
	if l.jobs == nil {
		return false
	}
	ri := l.idx.get(&fp)
	if ri <= 0 {
		return false
	}
	r := l.recs.at(ri)
	if r.state != Queued || r.waited {
		return false
	}
	j, ok := l.jobs.JobOf(fp)
	if !ok || j == 0 || j >= LentMax {
		return false
	}
	if _, at := l.jobs.JobKey(j); at.UnixNano() != r.since {
		return false
	}
	l.idx.set(&fp, ri, uint64(j)|lentBit)
	l.queue.unlink(ri, l.atLQ)
	l.keys.free(r)
	l.recs.release(ri)
	l.lent++
	l.jobs.Lent(j)
	return true
}

// LendQueued lends every queued key whose job the holder has (Lend), as
// a restore ends: the keys and jobs come back from the store apart, each
// with its own copy. It returns how many it lent.
func (l *Ledger) LendQueued() int {
	n := 0
	for ri := l.queue.head; ri != 0; {
		r := l.recs.at(ri)
		next, fp := r.lq.next, r.fp
		if l.Lend(fp) { // unlinks ri and frees r
			n++
		}
		ri = next
	}
	return n
}

// LentJob is the job queued key fp is lent to, if it is.
func (l *Ledger) LentJob(fp id.Fingerprint) (uint32, bool) {
	if ri := l.idx.get(&fp); ri < 0 {
		return uint32(ri) &^ lentBit, true
	}
	return 0, false
}

// Reclaim takes back queued key fp from job j, which is being forgotten:
// the key gets a record again, in its place by queue time in the queued
// list (found from the list's end: the jobs paged out are the youngest).
// Nothing when fp is not lent to j.
func (l *Ledger) Reclaim(fp id.Fingerprint, j uint32) {
	ri := l.idx.get(&fp)
	if ri >= 0 || uint32(ri)&^lentBit != j {
		return
	}
	k, at := l.jobs.JobKey(j)
	ni := l.recs.alloc()
	r := l.recs.at(ni)
	r.fp, r.since = fp, at.UnixNano()
	l.keys.put(r, &k)
	r.state = Queued
	l.idx.set(&fp, ri, uint64(uint32(ni)))
	after := l.queue.tail
	for after != 0 && l.recs.at(after).since > r.since {
		after = l.recs.at(after).lq.prev
	}
	l.queue.insertAfter(after, ni, l.atLQ)
	l.lent--
}

// dropLent forgets queued key fp, lent to job slot ri (negative), and
// tells the job's holder.
func (l *Ledger) dropLent(fp *id.Fingerprint, ri int32) {
	l.idx.del(fp, ri)
	l.lent--
	l.jobs.Returned(uint32(ri) &^ lentBit)
}

// lentRecord is the record of queued key fp, lent to job slot ri.
func (l *Ledger) lentRecord(fp id.Fingerprint, ri int32) Record {
	k, at := l.jobs.JobKey(uint32(ri) &^ lentBit)
	return Record{FP: fp, State: Queued, Key: k, Since: at.UTC()}
}

// lentKeys is every queued key lent to a job, in the order they were
// submitted (their jobs' order for the same time).
func (l *Ledger) lentKeys() []Record {
	type lentJob struct {
		j  uint32
		at int64
	}
	js := make([]lentJob, 0, l.lent)
	for s := range l.idx.x.All() {
		if uint32(s)&lentBit != 0 {
			j := uint32(s) &^ lentBit
			_, at := l.jobs.JobKey(j)
			js = append(js, lentJob{j, at.UnixNano()})
		}
	}
	slices.SortFunc(js, func(a, b lentJob) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.j, b.j)) })
	out := make([]Record, len(js))
	for i, x := range js {
		out[i] = l.lentRecord(l.jobs.JobFP(x.j), int32(x.j|lentBit))
	}
	return out
}

// Lent is the number of queued keys lent to their jobs.
func (l *Ledger) Lent() int { return l.lent }

// RecordSlots is how many record slots the ledger's slab has grown to,
// live and free: its memory holds them all (a slab never shrinks).
func (l *Ledger) RecordSlots() int { return l.recs.size() - 1 } // slot 0 is none
