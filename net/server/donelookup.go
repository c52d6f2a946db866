package server

import (
	"fmt"

	"drover/coord"
	"drover/coord/id"
	"drover/net/wire"
	"drover/store"
)

// The bounded done set (issue 7, store.done_cache), the reactor's half.
// The coordinator keeps at most Coord.Ledger.DoneCache done and failed keys
// in memory and evicts the oldest once their writes are durable; the store
// keeps them all. So:
//
//   - persist notes which coordinator write batch (Coordinator.WriteBatch)
//     each store batch carries, and release, as store batches become
//     durable, tells the coordinator (WritesDurable);
//   - before a REQUEST, QUEUE, DONE, SUBMIT or RESULT (its links) reaches
//     the coordinator, lookupDone asks it which keys it has no record of
//     (Unknown, a map probe per key), looks those up with store.LookupKey
//     (a miss usually costs only bloom filter probes) and gives back the
//     done and failed ones (KnownDone); the operation then answers exactly
//     as if they had stayed in memory, TTLs included.
//
// It all runs on the reactor goroutine, which owns the coordinator; the
// store's reads are safe beside its writer goroutine. With an unbounded
// done set (DoneCache 0) every record is in memory and nothing is looked up.

// batchMark ties a store batch to the coordinator write batch it carries.
type batchMark struct {
	store  uint64 // durable.applied when it was applied
	writes uint64 // Coordinator.WriteBatch of its Ready
}

// doneLookup is the reactor's state for the bounded done set.
type doneLookup struct {
	marks []batchMark        // applied, not yet reported durable, in order
	keys  []id.Key           // scratch: the keys of one message
	fps   []id.Fingerprint   // scratch: the ones the coordinator does not know
	back  []coord.KnownKey   // scratch: the done and failed ones the store knows
	stats doneLookupCounters // for tests and logs
}

// doneLookupCounters count the store lookups of the bounded done set.
type doneLookupCounters struct {
	Lookups uint64 // keys looked up in the store
	Hits    uint64 // of them, done or failed keys given back to the coordinator
}

// bounded reports whether the coordinator's done set is bounded (and a
// store answers for what it evicted).
func (s *Server) bounded() bool {
	return s.dur != nil && s.c.Config().Ledger.DoneCache > 0
}

// markBatch notes that store batch seq carries the writes of the last
// Ready (called by persist when it applies one).
func (s *Server) markBatch(seq uint64) {
	if !s.bounded() {
		return
	}
	l := &s.dur.look
	l.marks = append(l.marks, batchMark{store: seq, writes: s.c.WriteBatch()})
}

// durableUpTo tells the coordinator that the writes of every store batch
// up to done are durable (called by release).
func (s *Server) durableUpTo(done uint64) {
	if !s.bounded() {
		return
	}
	l := &s.dur.look
	n := 0
	for n < len(l.marks) && l.marks[n].store <= done {
		n++
	}
	if n == 0 {
		return
	}
	s.c.WritesDurable(l.marks[n-1].writes)
	m := copy(l.marks, l.marks[n:])
	l.marks = l.marks[:m]
}

// lookupDone gives the coordinator back, from the store, the done and
// failed records of m's keys it evicted, before m reaches it. It reports
// false when the store could not be read: m was then answered ERROR 500
// (answering it without the records could hand out finished work again)
// and the store's failure is recorded, which stops the reactor.
func (s *Server) lookupDone(ident []byte, m wire.Message) bool {
	if !s.bounded() && s.pg == nil || s.dur.failed != nil {
		return true
	}
	l := &s.dur.look
	keys := l.keys[:0]
	switch m := m.(type) {
	case *wire.Request:
		keys = append(keys, m.Keys...)
	case *wire.Queue:
		keys = append(keys, m.Keys...)
	case *wire.Done:
		for i := range m.Items {
			keys = append(keys, m.Items[i].Key)
		}
	case *wire.Submit:
		for i := range m.Jobs {
			keys = append(keys, m.Jobs[i].Key)
		}
	case *wire.Result:
		for i := range m.Items {
			for j := range m.Items[i].Links {
				keys = append(keys, m.Items[i].Links[j].Key)
			}
		}
	}
	if len(keys) == 0 {
		return true
	}
	l.fps = s.c.Unknown(keys, l.fps[:0])
	clear(keys) // drop the strings
	l.keys = keys[:0]
	back := l.back[:0]
	for _, fp := range l.fps {
		state, at, ok, err := s.dur.st.LookupKey(fp)
		l.stats.Lookups++
		if err != nil {
			err = fmt.Errorf("look up done key %s: %w", fp, err)
			s.dur.mu.Lock()
			if s.dur.err == nil {
				s.dur.err = err
			}
			s.dur.mu.Unlock()
			s.send(s.peers, ident, storeFailedError(m.RequestID(), err))
			return false
		}
		if ok && (state == store.KeyDone || state == store.KeyFailed) {
			back = append(back, coord.KnownKey{FP: fp, At: at, Failed: state == store.KeyFailed})
		}
		if ok && state == store.KeyQueued && s.pg != nil {
			if err := s.queuedFromStore(fp); err != nil { // paging.go
				s.send(s.peers, ident, storeFailedError(m.RequestID(), err))
				return false
			}
		}
	}
	l.stats.Hits += uint64(s.c.KnownDone(back))
	s.pg.giveBack(s.c) // paging.go
	l.back = back[:0]
	return true
}

// noteExpired keeps the keys the store's sweeper deleted for the reactor
// (it runs on the sweeper's goroutine) and wakes it. Only a bounded done
// set needs them: keys it left in the store stop counting as done.
func (d *durable) noteExpired(fps []id.Fingerprint) {
	d.mu.Lock()
	d.expired = append(d.expired, fps...)
	d.mu.Unlock()
	select {
	case d.ring <- struct{}{}:
	default:
	}
}

// storeExpired hands the coordinator the keys the sweeper deleted.
func (s *Server) storeExpired() {
	d := s.dur
	d.mu.Lock()
	fps := d.expired
	d.expired = nil
	d.mu.Unlock()
	if len(fps) > 0 && s.bounded() {
		s.c.StoredExpired(fps)
	}
}
