package ledger

import (
	"fmt"

	"drover/coord/id"
	"drover/coord/offheap"
)

// check verifies that the ledger's index structures agree with its table:
// the lists, the per-session sets, the waiter queues, the counters, the free
// lists. It returns the first disagreement found.
func (l *Ledger) check() error {
	seen := make(map[int32]string) // rec index -> which list it is on
	walk := func(name string, ls *list, state State) error {
		n, prev := 0, int32(0)
		var last int64
		for ri := ls.head; ri != 0; ri = l.recs.at(ri).lq.next {
			r := l.recs.at(ri)
			if where, dup := seen[ri]; dup {
				return fmt.Errorf("rec %d on the %s list and the %s list", ri, name, where)
			}
			seen[ri] = name
			if r.lq.prev != prev {
				return fmt.Errorf("%s list: rec %d prev %d, want %d", name, ri, r.lq.prev, prev)
			}
			if r.state != state {
				return fmt.Errorf("%s list: rec %d in state %v", name, ri, r.state)
			}
			if got := l.idx.get(&r.fp); got != ri {
				return fmt.Errorf("%s list: rec %d (%s) not indexed (got %d)", name, ri, r.fp, got)
			}
			if n > 0 && r.since < last {
				return fmt.Errorf("%s list: rec %d since %d before its predecessor's %d", name, ri, r.since, last)
			}
			last, prev = r.since, ri
			n++
		}
		if ls.tail != prev {
			return fmt.Errorf("%s list: tail %d, want %d", name, ls.tail, prev)
		}
		if ls.n != n {
			return fmt.Errorf("%s list: n %d, walked %d", name, ls.n, n)
		}
		return nil
	}
	if err := walk("lease", &l.lease, Requested); err != nil {
		return err
	}
	if err := walk("queue", &l.queue, Queued); err != nil {
		return err
	}
	if l.idx.x.Len() != len(seen)+l.lent {
		return fmt.Errorf("index has %d keys, lists hold %d and %d are lent to jobs", l.idx.x.Len(), len(seen), l.lent)
	}
	if err := l.checkIndex(); err != nil {
		return err
	}
	for ri := range seen {
		if _, done := l.done.lookup(l.recs.at(ri).fp); done {
			return fmt.Errorf("key %s is both live and done", l.recs.at(ri).fp)
		}
	}
	if err := l.checkKeys(seen); err != nil {
		return err
	}

	// Owners: every requested record is held by exactly one session, its owner.
	held := make(map[int32]id.Session)
	waits := 0
	for s, si := range l.sessIdx {
		ss := &l.sess[si]
		if ss.id != s {
			return fmt.Errorf("session %d indexed at %d which holds session %d", s, si, ss.id)
		}
		if ss.held.head == 0 && ss.waits.head == 0 {
			return fmt.Errorf("session %d holds and waits on nothing but is kept", s)
		}
		prev, n := int32(0), 0
		for ri := ss.held.head; ri != 0; ri = l.recs.at(ri).own.next {
			r := l.recs.at(ri)
			if r.own.prev != prev {
				return fmt.Errorf("session %d held list: rec %d prev %d, want %d", s, ri, r.own.prev, prev)
			}
			if other, dup := held[ri]; dup {
				return fmt.Errorf("key %s has two owners: sessions %d and %d", r.fp, other, s)
			}
			held[ri] = s
			if r.state != Requested || r.owner != si {
				return fmt.Errorf("session %d holds rec %d in state %v owned by session index %d", s, ri, r.state, r.owner)
			}
			prev = ri
			n++
		}
		if ss.held.tail != prev || ss.held.n != n {
			return fmt.Errorf("session %d held list tail %d n %d, want %d and %d", s, ss.held.tail, ss.held.n, prev, n)
		}
		prev, n = 0, 0
		for wi := ss.waits.head; wi != 0; wi = l.ws.at(wi).sw.next {
			w := l.ws.at(wi)
			if w.sw.prev != prev {
				return fmt.Errorf("session %d wait list: waiter %d prev %d, want %d", s, wi, w.sw.prev, prev)
			}
			if w.session != s {
				return fmt.Errorf("session %d wait list holds a waiter of session %d", s, w.session)
			}
			if r := l.recs.at(w.rec); r.state != Requested || r.owner == si {
				return fmt.Errorf("session %d waits on key %s in state %v owned by session index %d", s, r.fp, r.state, r.owner)
			}
			waits++
			prev = wi
			n++
		}
		if ss.waits.tail != prev || ss.waits.n != n {
			return fmt.Errorf("session %d wait list tail %d n %d, want %d and %d", s, ss.waits.tail, ss.waits.n, prev, n)
		}
	}
	if len(held) != l.lease.n {
		return fmt.Errorf("sessions hold %d keys, %d are requested", len(held), l.lease.n)
	}
	if l.lastSI != 0 && l.sessIdx[l.lastS] != l.lastSI {
		return fmt.Errorf("session cache says %d is at %d, index says %d", l.lastS, l.lastSI, l.sessIdx[l.lastS])
	}

	// Waiter queues.
	total, fifos := 0, 0
	for ri := range seen {
		r := l.recs.at(ri)
		q, has := l.wq[ri]
		if has != r.waited {
			return fmt.Errorf("key %s: waited %v but FIFO present %v", r.fp, r.waited, has)
		}
		if !has {
			continue
		}
		fifos++
		n, prev := 0, int32(0)
		sessions := make(map[id.Session]bool)
		for wi := q.head; wi != 0; wi = l.ws.at(wi).fifo.next {
			w := l.ws.at(wi)
			if w.fifo.prev != prev || w.rec != ri {
				return fmt.Errorf("key %s FIFO: waiter %d prev %d rec %d, want %d and %d", r.fp, wi, w.fifo.prev, w.rec, prev, ri)
			}
			if sessions[w.session] {
				return fmt.Errorf("key %s: session %d waits twice", r.fp, w.session)
			}
			sessions[w.session] = true
			if _, ok := l.sessIdx[w.session]; !ok {
				return fmt.Errorf("key %s: waiter session %d is not indexed", r.fp, w.session)
			}
			prev = wi
			n++
		}
		if q.tail != prev || q.n != n || n == 0 {
			return fmt.Errorf("key %s FIFO: tail %d n %d, walked tail %d count %d (an empty FIFO is dropped)", r.fp, q.tail, q.n, prev, n)
		}
		if r.state != Requested {
			return fmt.Errorf("key %s in state %v has %d waiters", r.fp, r.state, n)
		}
		total += n
	}
	if fifos != len(l.wq) {
		return fmt.Errorf("%d waiter FIFOs, %d of live keys", len(l.wq), fifos)
	}
	if total != waits || total != l.nWaiters {
		return fmt.Errorf("waiters: %d in key queues, %d in session lists, counter %d", total, waits, l.nWaiters)
	}

	// Free lists account for every slab slot.
	count := func(head int32, next func(int32) int32) int {
		n := 0
		for i := head; i != 0; i = next(i) {
			n++
		}
		return n
	}
	if f := l.recs.freeLen(); f+len(seen) != l.recs.size()-1 {
		return fmt.Errorf("recs: %d free + %d live != %d slots", f, len(seen), l.recs.size()-1)
	}
	if f := l.ws.freeLen(); f+l.nWaiters != l.ws.size()-1 {
		return fmt.Errorf("waiters: %d free + %d used != %d slots", f, l.nWaiters, l.ws.size()-1)
	}
	if f := count(l.freeS, func(i int32) int32 { return l.sess[i].nextFree }); f+len(l.sessIdx) != len(l.sess)-1 {
		return fmt.Errorf("sessions: %d free + %d used != %d slots", f, len(l.sessIdx), len(l.sess)-1)
	}

	if c := l.done.c; c != nil {
		return checkDoneCache(l)
	}
	// The done sweep queues cover every expiring done record.
	for k, v := range l.done.m {
		o := v & 1
		if l.done.ttl[o] == 0 {
			continue
		}
		q := &l.done.q[o]
		found := false
		for i := 0; i < q.n && !found; i++ {
			e := q.at(i)
			found = dkey(e.fp) == k && e.v == v
		}
		if !found {
			return fmt.Errorf("done key %x (stamp %d) is not in its sweep queue", k, v)
		}
	}
	return nil
}

// checkDoneCache checks a bounded done set: every record points at an entry
// of its own key in the FIFO, the FIFO keeps its bound unless its front
// entry is a record whose write is not durable yet, and no sweep queue is
// used.
func checkDoneCache(l *Ledger) error {
	c := l.done.c
	for k, pos := range l.done.m {
		i := int(pos - c.head)
		if i < 0 || i >= c.q.n {
			return fmt.Errorf("done key %x: position %d outside the FIFO [%d, %d)", k, pos, c.head, c.head+uint32(c.q.n))
		}
		if e := c.q.at(i); dkey(e.fp) != k {
			return fmt.Errorf("done key %x: position %d holds key %x", k, pos, dkey(e.fp))
		}
	}
	if c.q.n > c.limit+c.over {
		e := c.q.front()
		pos, ok := l.done.m[dkey(e.fp)]
		if !ok || pos != c.head || c.isDurable(e.batch) {
			return fmt.Errorf("done cache holds %d entries over its bound %d, but its front (batch %d, durable %d) could go", c.q.n, c.limit, e.batch, c.durable)
		}
	}
	if c.q.n < len(l.done.m) {
		return fmt.Errorf("done cache: %d records, only %d FIFO entries", len(l.done.m), c.q.n)
	}
	if l.done.q[0].n+l.done.q[1].n != 0 {
		return fmt.Errorf("bounded done set uses its sweep queues (%d, %d entries)", l.done.q[0].n, l.done.q[1].n)
	}
	return nil
}

// checkIndex verifies the fingerprint index: every entry names a live
// record with its tag, is reachable from its home without crossing an empty
// slot, and the count is right (offheap.Index.Check).
func (l *Ledger) checkIndex() error {
	lent := 0
	err := l.idx.x.Check(func(s uint64) error {
		if uint32(s)&lentBit != 0 {
			lent++
			j := uint32(s) &^ lentBit
			if l.jobs == nil {
				return fmt.Errorf("names job %d with no job holder", j)
			}
			if fp := l.jobs.JobFP(j); s&^0xFFFFFFFF != fpTag(&fp) {
				return fmt.Errorf("tag %x, job %d's is %x", s>>32, j, fpTag(&fp)>>32)
			}
			return nil
		}
		ri := int32(uint32(s))
		if ri <= 0 || int(ri) >= l.recs.size() {
			return fmt.Errorf("names rec %d, outside the slab", ri)
		}
		r := l.recs.at(ri)
		if r.state == 0 {
			return fmt.Errorf("names free rec %d", ri)
		}
		if s&^0xFFFFFFFF != fpTag(&r.fp) {
			return fmt.Errorf("tag %x, rec %d's is %x", s>>32, ri, fpTag(&r.fp)>>32)
		}
		return nil
	})
	if err == nil && lent != l.lent {
		err = fmt.Errorf("index names %d jobs, %d keys counted lent", lent, l.lent)
	}
	return err
}

// checkKeys verifies the key store: the name pairs' reference counts are
// the live records using them, every URL slot is used by one record or
// free, and no freed pair is still indexed.
func (l *Ledger) checkKeys(live map[int32]string) error {
	ks := &l.keys
	refs := make(map[uint32]int)
	var urls []offheap.Ref
	for ri := range live {
		r := l.recs.at(ri)
		refs[r.names]++
		urls = append(urls, offheap.Ref{Slot: r.url, Len: r.ulen})
	}
	if err := ks.pairs.Check(refs); err != nil {
		return err
	}
	return ks.urls.Check(urls)
}
