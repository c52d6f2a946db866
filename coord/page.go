package coord

import (
	"fmt"
	"time"

	"drover/admin"
	"drover/coord/broker"
	"drover/coord/id"
	"drover/coord/ledger"
)

// Queued jobs beyond RAM (issue 21, store.resident_jobs), the core's half.
// The edge (the reactor) keeps at most so many queued jobs in memory: once
// their records are durable it pages the youngest out (PageOut: the
// broker's job record and the ledger's queued key both leave memory), and
// before the queues run dry it reads the oldest back from its store and
// pages them in (PageIn), in id order. Jobs and keys paged out still count
// as queued in Totals.
//
// A key paged out is still queued: before an operation, Unknown names it
// (as it names done keys a bounded done set evicted), the edge looks it up
// in the store and gives it back with KnownQueued, and the operation
// answers as if it had never left (a REQUEST is answered no "queued", a
// SUBMIT is a duplicate). Such a key stays in memory; its job comes back
// with PageIn in its turn.

// QueuedKey is a queued key record the store holds, given back to the core
// with KnownQueued.
type QueuedKey struct {
	FP  id.Fingerprint
	Key id.Key
	At  time.Time // when it was queued
}

// PageOut takes the queued jobs jids out of memory, with their keys when
// the ledger holds them as queued. The edge must hold their current
// records durably, and call it between steps (after Ready), so that no
// change of theirs is waiting to be written. Jobs that are not waiting in
// their queues are left alone. It returns how many jobs went.
func (c *Coordinator) PageOut(now time.Time, jids []broker.JobID) int {
	n := 0
	if c.mem == nil {
		return 0 // the keys stay where the backend keeps them
	}
	for _, j := range jids {
		rec, ok := c.brk.Record(j)
		if !ok || !c.brk.PageOut(j) {
			continue
		}
		n++
		if r, ok := c.led.Lookup(now, rec.FP); ok && r.State == ledger.Queued {
			c.led.Restore(ledger.Write{Op: ledger.Delete, FP: rec.FP, At: now})
			c.mem.NoteStored(rec.FP) // the store holds it: the filter must not rule it out
			c.pagedKeys++
		}
	}
	return n
}

// PageIn brings back queued jobs paged out before, in the order given
// (their queue order): each goes to the back of its queue, and its key
// into the ledger as queued unless the ledger holds the key already. A
// record of a job in memory is passed over (the edge read the store past
// jobs it never paged out). It returns how many jobs came back.
func (c *Coordinator) PageIn(now time.Time, recs []JobRecord) (int, error) {
	n := 0
	if c.mem == nil {
		return 0, fmt.Errorf("coord: page in %d jobs: %w", len(recs), errBackend)
	}
	for i := range recs {
		r := &recs[i]
		if _, inMemory := c.brk.Record(r.ID); inMemory {
			continue
		}
		if err := c.brk.PageIn(now, r); err != nil {
			return n, fmt.Errorf("coord: %w", err)
		}
		n++
		if !c.mem.Known(r.FP) {
			c.led.Restore(ledger.Write{Op: ledger.PutQueued, FP: r.FP, Key: r.Key, At: r.Created})
			c.pagedKeys = max(c.pagedKeys-1, 0)
		}
		c.lend(r.FP) // one copy of the URL, the job's, as after a submit
	}
	return n, nil
}

// KnownQueued gives the ledger back queued key records the store holds
// for keys Unknown named, before the operation on them; a key the ledger
// knows meanwhile is ignored. It returns how many were taken.
func (c *Coordinator) KnownQueued(keys []QueuedKey) int {
	n := 0
	if c.mem == nil {
		return 0
	}
	for _, k := range keys {
		if c.mem.Known(k.FP) {
			continue
		}
		c.led.Restore(ledger.Write{Op: ledger.PutQueued, FP: k.FP, Key: k.Key, At: k.At})
		c.pagedKeys = max(c.pagedKeys-1, 0)
		n++
	}
	return n
}

// RestorePaged counts the queued jobs and queued keys a restore left in
// the store instead of passing them to RestoreRecord: they count as queued
// and come back with PageIn and KnownQueued. Call it before FinishRestore.
func (c *Coordinator) RestorePaged(jobs, keys int) error {
	d := &c.dur
	switch {
	case d.phase == restoreDone:
		return fmt.Errorf("restore %d queued jobs and %d queued keys left in the store: the restore is finished, want them before FinishRestore", jobs, keys)
	case jobs < 0 || keys < 0:
		return fmt.Errorf("restore %d queued jobs and %d queued keys left in the store: want counts >= 0", jobs, keys)
	}
	if err := c.brk.RestorePaged(jobs); err != nil {
		return fmt.Errorf("coord: %w", err)
	}
	d.phase = restoring
	c.pagedKeys += keys
	d.stats.KeysQueued += keys
	d.stats.JobsQueued += jobs
	return nil
}

// RestoreStoredKey notes, during a restore, a key record the restore left
// in the store (a done key beyond the done set, a queued key of a paged
// restore), so that the stored-key filter (Config.Ledger.StoredFilter)
// does not rule it out. Pass every such key, as the store's recovery
// skips it.
func (c *Coordinator) RestoreStoredKey(fp id.Fingerprint) {
	if c.mem != nil {
		c.mem.NoteStored(fp)
	}
}

// RestoreUnfiltered notes, during a restore, that the key records left in
// the store were counted (RestorePaged, RestoreStored) but not passed to
// RestoreStoredKey: the edge reads them after the restore, while the
// coordinator serves, and passes them to NoteStoredKeys. Until
// StoredKeysNoted, the stored-key filter is incomplete, and Unknown names
// every key memory does not know, so that each is looked up in the store:
// dedup stays exact, a new key costs a read.
func (c *Coordinator) RestoreUnfiltered() {
	if c.mem != nil {
		c.unfiltered = true
	}
}

// NoteStoredKeys adds key records the store holds to the stored-key
// filter, after a RestoreUnfiltered restore (any time, in any order).
func (c *Coordinator) NoteStoredKeys(fps []id.Fingerprint) {
	if c.mem == nil {
		return
	}
	for _, fp := range fps {
		c.mem.NoteStored(fp)
	}
}

// StoredKeysNoted ends RestoreUnfiltered: every key record the store held
// when the edge began reading them went to NoteStoredKeys, so the filter
// rules out keys again. queued and done correct the counts of keys left in
// the store by what the read found beyond what the restore counted (the
// store's sweeper deletes expired done records between the counts it
// keeps): the totals are the store's again.
func (c *Coordinator) StoredKeysNoted(queued, done int) {
	if c.mem == nil {
		return
	}
	c.unfiltered = false
	c.pagedKeys = max(c.pagedKeys+queued, 0)
	c.mem.AdjustStored(done)
}

// ForgetRestoredKey takes back a queued key a restore took from its job's
// record (RestoreRecord, the edge not reading key records) when the store
// holds another state for it (the key was marked done while its job
// waited): it leaves memory, to be looked up in the store like any key
// left there, and counts as queued in the store no more than before (the
// edge counted it among the keys it restored). It reports whether the
// ledger held fp as queued.
func (c *Coordinator) ForgetRestoredKey(now time.Time, fp id.Fingerprint) bool {
	if c.mem == nil {
		return false
	}
	if r, ok := c.led.Lookup(now, fp); !ok || r.State != ledger.Queued {
		return false
	}
	c.led.Restore(ledger.Write{Op: ledger.Delete, FP: fp, At: now})
	c.pagedKeys++
	return true
}

// StoreCounts are the key counts the edge persists with each batch
// (store.Counts): the queued keys, in memory or paged out, and the done
// and failed ones, in memory or in the store only.
func (c *Coordinator) StoreCounts() (queued, done int) {
	lc := c.led.Counts()
	return lc.Queued + c.pagedKeys, lc.Done
}

// StoredFilter reports the size of the ledger's stored-key filter.
func (c *Coordinator) StoredFilter() ledger.StoredFilterStats {
	if c.mem == nil {
		return ledger.StoredFilterStats{}
	}
	return c.mem.StoredFilter()
}

// Paged reports the queued jobs and keys paged out of memory.
func (c *Coordinator) Paged() (jobs, keys int) { return c.brk.PagedOut(), c.pagedKeys }

// ResidentQueued is the number of queued jobs in memory, waiting in their
// queues.
func (c *Coordinator) ResidentQueued() int { return c.brk.Count(broker.Queued) }

// YoungestQueued appends to dst up to n queued jobs in memory, youngest
// (highest id) first: what PageOut takes first.
func (c *Coordinator) YoungestQueued(n int, dst []broker.JobID) []broker.JobID {
	return c.brk.YoungestQueued(n, dst)
}

// LastJob is the highest job id allocated so far.
func (c *Coordinator) LastJob() broker.JobID { return c.brk.Counters().LastID }

// PagedJobRow is the jobs view's row of a queued job read back from the
// store while it is paged out, for an edge that continues a jobs window
// into the store (console and admin lists): false when the job is in
// memory (the store also holds the records of jobs it has not paged out),
// so that the edge passes over it.
func (c *Coordinator) PagedJobRow(r *JobRecord) (admin.JobRow, bool) {
	if _, inMemory := c.brk.Record(r.ID); inMemory || r.State != broker.Queued {
		return admin.JobRow{}, false
	}
	return admin.JobRow{
		JobID: uint64(r.ID), Key: r.FP.String(), Crawler: r.Key.Crawler, Processor: r.Key.Processor, URL: r.Key.URL,
		State: broker.Queued.String(), Attempts: r.Attempts, Failures: r.Failures, Throttles: r.Throttles,
		LastError: r.LastError, Reason: PagedReason, Wait: broker.WaitPaged.Wire(), Created: r.Created, Updated: r.Updated,
	}, true
}

// PagedReason is the Reason of a queued job's row while it is paged out.
var PagedReason = broker.WaitPaged.String() + " (store.resident_jobs)"
