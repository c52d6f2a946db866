package broker

import (
	"time"

	"drover/coord/id"
)

// retain forgets the oldest done jobs beyond Config.DoneRetention: their
// records leave every index and their memory is released (a chunk of
// records is freed once all of its jobs are forgotten). They stay counted
// as done.
func (b *Broker) retain() {
	if b.cfg.DoneRetention < 0 {
		return
	}
	for b.dones.n > b.cfg.DoneRetention {
		j := b.dones.head
		b.dones.remove(&b.jobs, j)
		b.age.move(j.jobID(), Done, 0)
		b.hostOf(j).idx.add(int(j.hostPos), Done, -1)
		for _, tr := range b.trees {
			if tr != nil {
				tr.remove(j)
			}
		}
		b.forgot++
		b.byKey.del(j.fp, j.jobID())
		h := b.hostOf(j)
		b.forget(j)
		b.compactHost(h)
	}
}

// URLOf returns the URL of the newest job of key fp whose record is kept
// (see JobOfKey).
func (b *Broker) URLOf(fp id.Fingerprint) (string, bool) {
	j, ok := b.byKey.get(fp)
	if !ok {
		return "", false
	}
	return b.url(b.jobs.get(j)), true
}

// OnForget sets a function called with a job's fingerprint and ID as the
// broker forgets the job's record (a done job past Config.DoneRetention, a
// queued job paged out): the coordinator takes back a queued key its
// ledger lent the job (ledger.Ledger.Lend). The record is still there
// during the call (KeyOf, FPOf).
func (b *Broker) OnForget(f func(fp id.Fingerprint, j JobID)) { b.onForget = f }

// FPOf is the fingerprint of job j's key. The job's record must be kept
// (a job its ledger lent a key to, until OnForget's call).
func (b *Broker) FPOf(j JobID) id.Fingerprint { return b.jobs.at(uint32(j)).fp }

// KeyOf is job j's key and when it was submitted; false when its record
// is not kept.
func (b *Broker) KeyOf(j JobID) (id.Key, time.Time, bool) {
	r := b.jobs.get(j)
	if r == nil {
		return id.Key{}, time.Time{}, false
	}
	return b.key(r), tm(r.created), true
}

// JobOfKey returns the newest job submitted for the key with fingerprint
// fp whose record is still kept (a key is submitted again once its done or
// failed TTL has passed, so older jobs of the key may exist too), unless
// that job is unindexed (Unindex: its key's holder answers for it).
func (b *Broker) JobOfKey(fp id.Fingerprint) (JobID, bool) {
	return b.byKey.get(fp)
}

// Unindex takes job j out of the key index while another index names it
// by its key (the ledger's, for a queued key lent to the job: issue 21,
// a second entry per queued job saved). JobOfKey does not find it until
// Reindex.
func (b *Broker) Unindex(j JobID) {
	if r := b.jobs.get(j); r != nil {
		b.byKey.del(r.fp, j)
	}
}

// Reindex puts job j, if it is kept, back in the key index as its key's
// newest job.
func (b *Broker) Reindex(j JobID) {
	if r := b.jobs.get(j); r != nil {
		b.byKey.set(r.fp, j)
	}
}
