package ledger

import "drover/coord/id"

// Storage. Live records, waiters and sessions live in slabs (reused through
// free lists) and are linked by int32 indexes, index 0 meaning "none", so
// the steady state allocates nothing and the garbage collector has few
// pointers to follow:
//
//   - every requested record is on the lease list (oldest lease first) and
//     on its owner's list of held keys; every queued record is on the queue
//     list (both lists use rec.prev/next: a record is on one at a time);
//   - every waiter is on its key's FIFO and on its session's list of waits;
//   - a session exists while it holds or waits on a key.
//
// The common case, a key with no waiter, costs no waiter storage at all.

// rec is a live (requested or queued) record.
type rec struct {
	fp           id.Fingerprint
	key          id.Key
	owner        id.Session // requested: the holder; queued: 0
	since        int64      // ns: lease start (requested) or queue time
	state        State
	prev, next   int32 // lease list or queue list; next links the free list
	sprev, snext int32 // owner's held keys
	whead, wtail int32 // waiters, FIFO
	nwait        int32
}

// waiter is one session waiting on one requested record.
type waiter struct {
	session      id.Session
	reqID        uint64
	since        int64
	rec          int32
	prev, next   int32 // the record's FIFO; next links the free list
	sprev, snext int32 // the session's waits
}

// session is what one session holds and waits on.
type session struct {
	id           id.Session
	ohead, otail int32 // held (requested) records
	whead, wtail int32 // waiters
	nextFree     int32
}

// list is the head and tail of a list of records linked by prev/next.
type list struct {
	head, tail int32
	n          int
}

// slab is storage for T addressed by int32 index, in fixed-size chunks so
// that growing never copies (no pause proportional to the table, and
// pointers to elements stay valid). Index 0 is reserved as "none".
type slab[T any] struct {
	chunks [][]T
	n      int32 // indexes [0, n) have been handed out (0 at creation)
}

const (
	chunkBits = 9
	chunkLen  = 1 << chunkBits
)

// at returns element i.
func (s *slab[T]) at(i int32) *T { return &s.chunks[i>>chunkBits][i&(chunkLen-1)] }

// grow hands out a never-used index.
func (s *slab[T]) grow() int32 {
	if int(s.n) == len(s.chunks)*chunkLen {
		s.chunks = append(s.chunks, make([]T, chunkLen))
	}
	s.n++
	return s.n - 1
}

// size is the number of indexes handed out, 0 included.
func (s *slab[T]) size() int { return int(s.n) }

func (l *Ledger) allocRec() int32 {
	if ri := l.freeR; ri != 0 {
		r := l.recs.at(ri)
		l.freeR, r.next = r.next, 0
		return ri
	}
	return l.recs.grow()
}

func (l *Ledger) freeRec(ri int32) {
	*l.recs.at(ri) = rec{next: l.freeR} // drops the key's strings for the GC
	l.freeR = ri
}

func (l *Ledger) allocWaiter() int32 {
	if wi := l.freeW; wi != 0 {
		w := l.ws.at(wi)
		l.freeW, w.next = w.next, 0
		return wi
	}
	return l.ws.grow()
}

func (l *Ledger) freeWaiter(wi int32) {
	*l.ws.at(wi) = waiter{next: l.freeW}
	l.freeW = wi
}

// session returns the index of session s, creating it if create is set;
// without create it returns 0 for a session the ledger does not know.
func (l *Ledger) session(s id.Session, create bool) int32 {
	if s == l.lastS && l.lastSI != 0 {
		return l.lastSI
	}
	si, ok := l.sessIdx[s]
	if !ok {
		if !create {
			return 0
		}
		if si = l.freeS; si != 0 {
			l.freeS = l.sess[si].nextFree
		} else {
			l.sess = append(l.sess, session{})
			si = int32(len(l.sess) - 1)
		}
		l.sess[si] = session{id: s}
		l.sessIdx[s] = si
	}
	l.lastS, l.lastSI = s, si
	return si
}

// gcSession forgets session si if it neither holds nor waits on anything.
func (l *Ledger) gcSession(si int32) {
	if si == 0 {
		return
	}
	ss := &l.sess[si]
	if ss.ohead != 0 || ss.whead != 0 {
		return
	}
	delete(l.sessIdx, ss.id)
	if l.lastSI == si {
		l.lastS, l.lastSI = 0, 0
	}
	*ss = session{nextFree: l.freeS}
	l.freeS = si
}

// The list operations below are written out once per link field on
// purpose, as the broker's are (see coord/broker/job.go): they sit on every
// request, queue and done.

func (l *Ledger) listAppend(ls *list, ri int32) {
	r := l.recs.at(ri)
	r.prev, r.next = ls.tail, 0
	if ls.tail != 0 {
		l.recs.at(ls.tail).next = ri
	} else {
		ls.head = ri
	}
	ls.tail = ri
	ls.n++
}

func (l *Ledger) listUnlink(ls *list, ri int32) {
	r := l.recs.at(ri)
	if r.prev != 0 {
		l.recs.at(r.prev).next = r.next
	} else {
		ls.head = r.next
	}
	if r.next != 0 {
		l.recs.at(r.next).prev = r.prev
	} else {
		ls.tail = r.prev
	}
	r.prev, r.next = 0, 0
	ls.n--
}

func (l *Ledger) ownAppend(si, ri int32) {
	ss, r := &l.sess[si], l.recs.at(ri)
	r.sprev, r.snext = ss.otail, 0
	if ss.otail != 0 {
		l.recs.at(ss.otail).snext = ri
	} else {
		ss.ohead = ri
	}
	ss.otail = ri
}

func (l *Ledger) ownUnlink(si, ri int32) {
	ss, r := &l.sess[si], l.recs.at(ri)
	if r.sprev != 0 {
		l.recs.at(r.sprev).snext = r.snext
	} else {
		ss.ohead = r.snext
	}
	if r.snext != 0 {
		l.recs.at(r.snext).sprev = r.sprev
	} else {
		ss.otail = r.sprev
	}
	r.sprev, r.snext = 0, 0
}

func (l *Ledger) fifoAppend(ri, wi int32) {
	r, w := l.recs.at(ri), l.ws.at(wi)
	w.prev, w.next = r.wtail, 0
	if r.wtail != 0 {
		l.ws.at(r.wtail).next = wi
	} else {
		r.whead = wi
	}
	r.wtail = wi
	r.nwait++
}

func (l *Ledger) fifoUnlink(ri, wi int32) {
	r, w := l.recs.at(ri), l.ws.at(wi)
	if w.prev != 0 {
		l.ws.at(w.prev).next = w.next
	} else {
		r.whead = w.next
	}
	if w.next != 0 {
		l.ws.at(w.next).prev = w.prev
	} else {
		r.wtail = w.prev
	}
	w.prev, w.next = 0, 0
	r.nwait--
}

func (l *Ledger) swaitAppend(si, wi int32) {
	ss, w := &l.sess[si], l.ws.at(wi)
	w.sprev, w.snext = ss.wtail, 0
	if ss.wtail != 0 {
		l.ws.at(ss.wtail).snext = wi
	} else {
		ss.whead = wi
	}
	ss.wtail = wi
}

func (l *Ledger) swaitUnlink(si, wi int32) {
	ss, w := &l.sess[si], l.ws.at(wi)
	if w.sprev != 0 {
		l.ws.at(w.sprev).snext = w.snext
	} else {
		ss.whead = w.snext
	}
	if w.snext != 0 {
		l.ws.at(w.snext).sprev = w.sprev
	} else {
		ss.wtail = w.sprev
	}
	w.sprev, w.snext = 0, 0
}
