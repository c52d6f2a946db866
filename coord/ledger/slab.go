package ledger

import (
	"unsafe"

	"drover/coord/id"
	"drover/coord/offheap"
)

// Storage. Live records, waiters and sessions live in slabs (reused through
// free lists) and are linked by int32 indexes, index 0 meaning "none", so
// the steady state allocates nothing and the garbage collector has no
// pointer to follow in them (keys.go keeps the keys, index.go finds a
// record by fingerprint):
//
//   - every requested record is on the lease list (oldest lease first) and
//     on its owner's list of held keys; every queued record is on the queue
//     list (both use rec.lq: a record is on one at a time);
//   - every waiter is on its key's FIFO and on its session's list of waits;
//     a record's FIFO lives in Ledger.wq, only while it has waiters;
//   - a session exists while it holds or waits on a key.
//
// The common case, a key with no waiter, costs 56 bytes of record, 11 to
// 16 of index (an 8-byte slot at a load of 1/2 to 3/4) and its URL's slot: the URL without its origin, plus 3 bytes
// naming the origin (offheap.Strings), rounded up to 4 bytes.

// rec is a live (requested or queued) record.
type rec struct {
	fp     id.Fingerprint
	since  int64  // ns: lease start (requested) or queue time
	lq     link   // lease list or queue list
	own    link   // owner's held keys
	owner  int32  // requested: the holder's index in Ledger.sess; queued: 0
	names  uint32 // the interned (crawler, processor)
	url    uint32 // the URL's slot (keyStore)
	ulen   uint16 // the URL's length; urlLong: kept as a string
	state  State  // 0 for a free record
	waited bool   // has a FIFO of waiters in Ledger.wq
}

// waiter is one session waiting on one requested record.
type waiter struct {
	session id.Session
	reqID   uint64
	since   int64
	rec     int32
	fifo    link // the record's FIFO
	sw      link // the session's waits
}

// session is what one session holds and waits on.
type session struct {
	id       id.Session
	held     list // requested records, linked by rec.own
	waits    list // waiters, linked by waiter.sw
	nextFree int32
}

// link is an element's place in a doubly linked list of slab indexes.
type link struct{ prev, next int32 }

// list is the head, tail and length of a list of slab indexes.
type list struct {
	head, tail int32
	n          int
}

// push appends element i, whose link at returns, to the list.
func (ls *list) push(i int32, at func(int32) *link) {
	p := at(i)
	p.prev, p.next = ls.tail, 0
	if ls.tail != 0 {
		at(ls.tail).next = i
	} else {
		ls.head = i
	}
	ls.tail = i
	ls.n++
}

// insertAfter puts element i after element after (0: first).
func (ls *list) insertAfter(after, i int32, at func(int32) *link) {
	if after == ls.tail {
		ls.push(i, at)
		return
	}
	p := at(i)
	p.prev = after
	if after != 0 {
		p.next = at(after).next
		at(after).next = i
	} else {
		p.next = ls.head
		ls.head = i
	}
	at(p.next).prev = i
	ls.n++
}

// unlink removes element i, whose link at returns, from the list.
func (ls *list) unlink(i int32, at func(int32) *link) {
	p := at(i)
	if p.prev != 0 {
		at(p.prev).next = p.next
	} else {
		ls.head = p.next
	}
	if p.next != 0 {
		at(p.next).prev = p.prev
	} else {
		ls.tail = p.prev
	}
	p.prev, p.next = 0, 0
	ls.n--
}

// slab is storage for T addressed by int32 index, in fixed-size chunks so
// that growing never copies (no pause proportional to the table, and
// pointers to elements stay valid). Index 0 is reserved as "none". A
// released element is zero but for its first four bytes, which link the
// free list (T is at least four bytes, 4-aligned, and its first four are
// nothing a free element is looked at for).
type slab[T any] struct {
	chunks [][]T
	n      int32        // indexes [0, n) have been handed out (0 at creation)
	free   int32        // the first released index, 0: none
	mem    *offheap.Mem // where chunks come from; T holds no Go pointer
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
		var zero T
		if unsafe.Sizeof(zero) < 4 || unsafe.Alignof(zero) < 4 {
			panic("ledger: a slab's elements must have room for its free list's link")
		}
		s.chunks = append(s.chunks, offheap.View[T](s.mem.Alloc(chunkLen*int(unsafe.Sizeof(zero))), chunkLen))
	}
	s.n++
	return s.n - 1
}

// size is the number of indexes handed out, 0 included.
func (s *slab[T]) size() int { return int(s.n) }

// alloc hands out a zeroed element: a released one, else a never-used one.
func (s *slab[T]) alloc() int32 {
	if i := s.free; i != 0 {
		next := (*int32)(unsafe.Pointer(s.at(i)))
		s.free, *next = *next, 0
		return i
	}
	return s.grow()
}

// release zeroes element i and puts it on the free list.
func (s *slab[T]) release(i int32) {
	e := s.at(i)
	var zero T
	*e = zero
	*(*int32)(unsafe.Pointer(e)) = s.free
	s.free = i
}

// freeLen is the length of the free list (for checks; a cycle stops it
// past size).
func (s *slab[T]) freeLen() int {
	n := 0
	for i := s.free; i != 0 && n <= int(s.n); i = *(*int32)(unsafe.Pointer(s.at(i))) {
		n++
	}
	return n
}

// The links each list uses, bound once in New.
func (l *Ledger) bindLinks() {
	l.atLQ = func(i int32) *link { return &l.recs.at(i).lq }
	l.atOwn = func(i int32) *link { return &l.recs.at(i).own }
	l.atFIFO = func(i int32) *link { return &l.ws.at(i).fifo }
	l.atSW = func(i int32) *link { return &l.ws.at(i).sw }
}

// dropRec removes live record ri (already off its lists, without waiters)
// from the index and frees it with its key.
func (l *Ledger) dropRec(ri int32) {
	r := l.recs.at(ri)
	l.idx.del(&r.fp, ri)
	l.keys.free(r)
	l.recs.release(ri)
}

// newRec makes a live record for key k in state st since t, indexed; the
// caller puts it on its lists.
func (l *Ledger) newRec(fp id.Fingerprint, k *id.Key, st State, t int64) (int32, *rec) {
	ri := l.recs.alloc()
	r := l.recs.at(ri)
	r.fp, r.since = fp, t
	l.keys.put(r, k)
	l.idx.put(&r.fp, ri)
	r.state = st
	return ri, r
}

// owner returns the session holding record r (0 for a queued one).
func (l *Ledger) owner(r *rec) id.Session {
	if r.owner == 0 {
		return 0
	}
	return l.sess[r.owner].id
}

// fifo returns record ri's waiter FIFO, creating it if create is set; nil
// when it has none and create is not set.
func (l *Ledger) fifo(ri int32, create bool) *list {
	r := l.recs.at(ri)
	if !r.waited {
		if !create {
			return nil
		}
		r.waited = true
		l.wq[ri] = &list{}
	}
	return l.wq[ri]
}

// dropFIFO forgets record ri's FIFO once it is empty.
func (l *Ledger) dropFIFO(ri int32) {
	r := l.recs.at(ri)
	if r.waited && l.wq[ri].n == 0 {
		delete(l.wq, ri)
		r.waited = false
	}
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
	if ss.held.head != 0 || ss.waits.head != 0 {
		return
	}
	delete(l.sessIdx, ss.id)
	if l.lastSI == si {
		l.lastS, l.lastSI = 0, 0
	}
	*ss = session{nextFree: l.freeS}
	l.freeS = si
}
