package ledger

import (
	"time"

	"drover/coord/id"
)

// Record is what the ledger knows of one key.
type Record struct {
	FP    id.Fingerprint // the key's fingerprint
	State State          // requested, queued or done
	// Key is set for requested and queued keys (done keys keep only their
	// fingerprint).
	Key     id.Key
	Owner   id.Session // the holder of a requested key; 0 otherwise
	Waiters int        // sessions waiting on a requested key
	// Since is when the key entered its state: the lease start of a
	// requested key, the queue time, or the done time (to the second,
	// rounded up).
	Since   time.Time
	Outcome Outcome // for State Done
}

// Waiter is one session waiting on a key.
type Waiter struct {
	Session id.Session // the waiting session
	ReqID   uint64     // echoed in its deferred answer
	Since   time.Time  // when it joined the queue
}

// Counts are the sizes of the ledger's tables.
type Counts struct {
	Requested int // keys held by sessions
	Queued    int // keys handed to a queue
	// Done counts done records held in memory, including expired ones the
	// sweep has not reached yet, and, with a bounded done set
	// (Config.DoneCache), those evicted to the store or left there by the
	// restore (DoneCache says how many of each).
	Done    int
	Waiters int // waiters over all keys
}

// Lookup returns the record of fp at time now; a done record past its TTL
// is reported absent.
func (l *Ledger) Lookup(now time.Time, fp id.Fingerprint) (Record, bool) {
	if ri := l.idx.get(&fp); ri > 0 {
		return l.record(ri), true
	} else if ri < 0 {
		return l.lentRecord(fp, ri), true
	}
	v, ok := l.done.lookup(fp)
	if !ok || l.done.expired(v, now.UnixNano()) {
		return Record{}, false
	}
	return Record{FP: fp, State: Done, Since: time.Unix(0, stampNanos(v)).UTC(), Outcome: stampOutcome(v)}, true
}

func (l *Ledger) record(ri int32) Record {
	r := l.recs.at(ri)
	waiters := 0
	if q := l.fifo(ri, false); q != nil {
		waiters = q.n
	}
	return Record{
		FP:      r.fp,
		State:   r.state,
		Key:     l.keys.key(r),
		Owner:   l.owner(r),
		Waiters: waiters,
		Since:   time.Unix(0, r.since).UTC(),
	}
}

// Waiters returns the sessions waiting on fp, first in line first; nil if
// none (or fp is not requested).
func (l *Ledger) Waiters(fp id.Fingerprint) []Waiter {
	ri := l.idx.get(&fp)
	if ri <= 0 {
		return nil // absent, or queued (lent to its job)
	}
	q := l.fifo(ri, false)
	if q == nil {
		return nil
	}
	out := make([]Waiter, 0, q.n)
	for wi := q.head; wi != 0; wi = l.ws.at(wi).fifo.next {
		w := l.ws.at(wi)
		out = append(out, Waiter{Session: w.session, ReqID: w.reqID, Since: time.Unix(0, w.since).UTC()})
	}
	return out
}

// Counts returns the sizes of the ledger's tables, in constant time.
func (l *Ledger) Counts() Counts {
	done := l.done.size()
	if l.done.c != nil {
		done += l.done.c.stored
	}
	return Counts{Requested: l.lease.n, Queued: l.queue.n + l.lent, Done: done, Waiters: l.nWaiters}
}

// Requested returns up to limit requested keys starting at offset, oldest
// lease first (the next to expire first), in O(offset+limit).
func (l *Ledger) Requested(offset, limit int) []Record {
	return l.window(&l.lease, offset, limit)
}

// Queued returns up to limit queued keys starting at offset, in the order
// they were queued (restored keys first, in the order restored), in
// O(offset+limit) while no key is lent to its job (lend.go); keys lent
// come in by their jobs' submit times, in O(queued keys).
func (l *Ledger) Queued(offset, limit int) []Record {
	if l.lent == 0 {
		return l.window(&l.queue, offset, limit)
	}
	if offset < 0 {
		offset = 0
	}
	lent := l.lentKeys()
	var out []Record
	ri := l.queue.head
	for i := 0; len(out) < limit && (ri != 0 || len(lent) > 0); i++ {
		var r Record
		if ri != 0 && (len(lent) == 0 || l.recs.at(ri).since <= lent[0].Since.UnixNano()) {
			if i >= offset {
				r = l.record(ri)
			}
			ri = l.recs.at(ri).lq.next
		} else {
			r, lent = lent[0], lent[1:]
		}
		if i >= offset {
			out = append(out, r)
		}
	}
	return out
}

func (l *Ledger) window(ls *list, offset, limit int) []Record {
	if offset < 0 {
		offset = 0
	}
	if limit <= 0 || offset >= ls.n {
		return nil
	}
	out := make([]Record, 0, min(limit, ls.n-offset))
	ri := ls.head
	for ; offset > 0; offset-- {
		ri = l.recs.at(ri).lq.next
	}
	for ; ri != 0 && len(out) < limit; ri = l.recs.at(ri).lq.next {
		out = append(out, l.record(ri))
	}
	return out
}
