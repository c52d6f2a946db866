package ledger

import (
	"fmt"
	"time"

	"drover/coord/id"
)

// The bounded done set (Config.DoneCache, issue 7): with a store behind the
// ledger, the done set need not live in RAM. Every put appends an entry
// (fingerprint, stamp, write batch) to one FIFO, and the map holds, instead
// of the stamp, the position of the key's newest entry. Beyond the bound the
// oldest entries are popped: an entry the map no longer points at is stale
// (the key was done again, or removed) and is simply dropped; the newest
// entry of a key is evicted with its map entry, but only once the write
// batch its PutDone went in is durable (WritesDurable): a key evicted
// before its record reached the disk would be unknown to everyone and done
// twice. When the front entry is not durable yet, eviction waits, and the
// set runs over its bound by at most the writes in flight.
//
// An evicted key is still done: the caller (the reactor) asks Known before
// an operation, looks the keys the ledger has no record of up in its store,
// and gives back the done and failed ones with KnownDone, after which the
// operation answers exactly as if the record had never left.
//
// Positions are kept modulo 2^32 (the FIFO never holds 2^32 entries), write
// batches too (fewer than 2^31 batches are ever in flight), so a map entry
// costs 16 bytes and a FIFO entry 24, as in the unbounded set with a TTL.

// Known must also be true for a key whose newest write is still in flight:
// the store may hold an older record of it (done, where the ledger has
// since deleted it, for example), and the ledger's memory is the truth.
// So a bounded ledger tracks, per key, the last batch it wrote the key in,
// until that batch is durable: only the writes in flight are held.

// flight is one write in flight: its key and batch.
type flight struct {
	fp    id.Fingerprint
	batch uint64
}

// cacheEntry is one put of a bounded set.
type cacheEntry struct {
	fp    id.Fingerprint
	v     uint32 // the stamp
	batch uint32 // the write batch of its PutDone, modulo 2^32; 0: durable already
}

// doneCache is the bounded set's FIFO and watermark.
type doneCache struct {
	limit   int
	q       fifo[cacheEntry]
	flights fifo[flight]              // writes not yet durable, in batch order
	inAir   map[id.Fingerprint]uint64 // key -> the batch of its last write, while not durable
	head    uint32                    // the position of q's front entry, modulo 2^32
	durable uint64                    // write batches 1..durable are durable
	stored  int                       // done records in the store and not in memory (evicted, or left there at restore)
	evicted uint64                    // records evicted since New
	over    int                       // entries KnownDone added since the last eviction (beyond the bound until then)
	filter  *storedFilter             // the ledger's stored-key filter, nil without one: evicted keys go in
}

// stamp is the stamp of the entry at position pos.
func (c *doneCache) stamp(pos uint32) uint32 { return c.q.at(int(pos - c.head)).v }

// push appends a put and returns its position.
func (c *doneCache) push(fp id.Fingerprint, v uint32, batch uint64) uint32 {
	pos := c.head + uint32(c.q.n)
	c.q.push(cacheEntry{fp: fp, v: v, batch: uint32(batch)})
	return pos
}

// isDurable reports whether write batch b (modulo 2^32) is durable.
func (c *doneCache) isDurable(b uint32) bool {
	return b == 0 || int32(b-uint32(c.durable)) <= 0
}

// evict pops entries beyond the bound, dropping stale ones and evicting the
// records of durable ones, until the front entry is a record whose write is
// not durable yet.
func (c *doneCache) evict(m map[doneKey]uint32) {
	c.over = 0
	for c.q.n > c.limit {
		e := c.q.front()
		k := dkey(e.fp)
		pos, ok := m[k]
		newest := ok && pos == c.head
		if newest && !c.isDurable(e.batch) {
			return
		}
		c.q.pop()
		c.head++
		if newest {
			delete(m, k)
			c.stored++
			c.evicted++
			if c.filter != nil {
				c.filter.add(&e.fp)
			}
		}
	}
}

// addWrite records w for TakeWrites (Persist and not quiet: the caller
// checks) and, in a bounded ledger, that w.FP has a write in flight.
func (l *Ledger) addWrite(w Write) {
	l.writes = append(l.writes, w)
	if c := l.done.c; c != nil {
		c.flights.push(flight{w.FP, l.wbatch})
		c.inAir[w.FP] = l.wbatch
	}
}

// land forgets the writes of batches up to c.durable.
func (c *doneCache) land() {
	for c.flights.n > 0 {
		f := c.flights.front()
		if f.batch > c.durable {
			return
		}
		c.flights.pop()
		if c.inAir[f.fp] == f.batch {
			delete(c.inAir, f.fp)
		}
	}
}

// batch is the write batch a put at this moment goes in: 0 while quiet
// (restoring: the record is durable already).
func (l *Ledger) batch() uint64 {
	if l.quiet || !l.cfg.Persist {
		return 0
	}
	return l.wbatch
}

// WriteBatch is the number of the write batch TakeWrites returned last
// (counting its calls from 1; 0 before the first): the writes of the n-th
// call form batch n, empty or not. Tell the ledger with WritesDurable when
// they are on disk.
func (l *Ledger) WriteBatch() uint64 { return l.wbatch - 1 }

// WritesDurable says that the writes of batches 1..n (see WriteBatch) are
// durable, so that a bounded done set (Config.DoneCache) may evict the
// records they put. A smaller n than before is ignored; so is the call in
// an unbounded ledger.
func (l *Ledger) WritesDurable(n uint64) {
	c := l.done.c
	if c == nil || n <= c.durable {
		return
	}
	c.durable = min(n, l.WriteBatch())
	c.land()
	c.evict(l.done.m)
}

// Known reports whether the ledger knows the state of fp without its
// store: fp has a record in memory (requested, queued, or done, expired or
// not), or a write not yet durable (then memory is the truth, and a record
// the store holds is older). A bounded ledger answers false for a key it
// evicted: look it up in the store and pass what it says to KnownDone
// before an operation on the key.
func (l *Ledger) Known(fp id.Fingerprint) bool {
	if l.idx.get(&fp) != 0 {
		return true
	}
	if _, ok := l.done.m[dkey(fp)]; ok {
		return true
	}
	if c := l.done.c; c != nil {
		_, ok := c.inAir[fp]
		return ok
	}
	return false
}

// KnownDone gives the ledger back a done (or failed: o) record of fp done
// at, which the caller's store holds: a record a bounded ledger evicted, or
// one a restore left in the store (RestoreStored). It is taken only if the
// ledger has no record of fp in memory (Known false), and then it is as if
// the record had never left: a request answers No "done" or "failed"
// until the outcome's TTL, measured from at, has passed, and as absent
// after (deleting the record, with a Delete write). It produces no events
// and no writes, and reports whether the record was taken. The record
// stays in memory at least until the current write batch is durable.
func (l *Ledger) KnownDone(fp id.Fingerprint, at time.Time, o Outcome) bool {
	if l.Known(fp) {
		return false
	}
	if o != DoneOK {
		o = DoneFailed
	}
	k := dkey(fp)
	c := l.done.c
	if c == nil { // unbounded: nothing was evicted, but take it all the same
		l.done.put(fp, at.UnixNano(), o, 0)
		return true
	}
	// No eviction now: the keys of the message being looked up, brought
	// back or known before, must all stay for its operation. The next put
	// or WritesDurable evicts.
	l.done.m[k] = c.push(fp, makeStamp(at.UnixNano(), o), l.batch())
	c.over++
	if c.stored > 0 {
		c.stored--
	}
	return true
}

// RestoreStored counts n done and failed records a restore left in the
// store (read back on demand through KnownDone), for Counts.Done. It is
// an error in an unbounded ledger, which must restore every record.
func (l *Ledger) RestoreStored(n int) error {
	if l.done.c == nil {
		return fmt.Errorf("ledger: %d done records left in the store, but the done set is unbounded (DoneCache 0): want them restored", n)
	}
	if n < 0 {
		return fmt.Errorf("ledger: %d done records left in the store: want >= 0", n)
	}
	l.done.c.stored += n
	return nil
}

// AdjustStored corrects the number of done records counted as in the
// store only by n (negative: fewer; never below none), for a caller that
// restored it from a count and found the store holding another number
// (its sweeper deleted expired records after the count was written). An
// unbounded ledger ignores it.
func (l *Ledger) AdjustStored(n int) {
	if c := l.done.c; c != nil {
		c.stored = max(c.stored+n, 0)
	}
}

// StoredExpired takes note that the store deleted these done and failed
// key records (their TTL ran out): those the ledger does not hold in memory
// were counted as stored only, for Counts.Done, and no longer are. (Those
// it holds expire in memory by the same TTL.) It returns how many it
// uncounted; an unbounded ledger has none.
func (l *Ledger) StoredExpired(fps []id.Fingerprint) int {
	c := l.done.c
	if c == nil {
		return 0
	}
	n := 0
	for _, fp := range fps {
		if _, inMemory := l.done.lookup(fp); inMemory || c.stored == 0 {
			continue
		}
		c.stored--
		n++
	}
	return n
}

// DoneCacheStats describes a bounded done set.
type DoneCacheStats struct {
	Limit    int    // Config.DoneCache
	InMemory int    // done records held in memory (may exceed Limit by the writes not yet durable)
	Stored   int    // done records believed in the store only (evicted, or left there at restore)
	Evicted  uint64 // records evicted since New
	Durable  uint64 // the last write batch known durable
}

// DoneCache describes the bounded done set; ok is false in an unbounded
// ledger.
func (l *Ledger) DoneCache() (DoneCacheStats, bool) {
	c := l.done.c
	if c == nil {
		return DoneCacheStats{}, false
	}
	return DoneCacheStats{Limit: c.limit, InMemory: len(l.done.m), Stored: c.stored, Evicted: c.evicted, Durable: c.durable}, true
}
