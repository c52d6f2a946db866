package server

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"drover/coord"
	"drover/coord/broker"
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
//     the coordinator, park asks it which keys it has no record of
//     (Unknown, a map probe per key); those are looked up in the store by
//     the lookup goroutine (lookup.go: batched, store.LookupKeys, a miss
//     usually costs only bloom filter probes) while the message waits, and
//     releaseLookups gives back the done and failed ones (KnownDone) before
//     the message reaches the coordinator; the operation then answers
//     exactly as if they had stayed in memory, TTLs included.
//
// The coordinator is the reactor's alone; the store's reads run on the
// lookup goroutine, safe beside its writer goroutine, so the reactor (and
// every other session) never waits for them. A session's messages reach
// the coordinator in the order it sent them. With an unbounded done set
// (DoneCache 0) every record is in memory and nothing is looked up.

// batchMark ties a store batch to the coordinator write batch it carries.
type batchMark struct {
	store  uint64 // durable.applied when it was applied
	writes uint64 // Coordinator.WriteBatch of its Ready
}

// doneLookup is the Server's done-set look-up part: the batches it
// reports durable, and the messages parked while their keys are looked
// up. It is given the coordinator and the pager (whose page-outs may send
// a parked message's keys back to the store: relook).
type doneLookup struct {
	c       *coord.Coordinator
	bounded bool   // the done set is bounded (Coord.Ledger.DoneCache > 0)
	pg      *pager // nil: every queued job in memory

	marks []batchMark        // applied, not yet reported durable, in order
	keys  []id.Key           // scratch: the keys of one message
	fps   []id.Fingerprint   // scratch: the ones the coordinator does not know
	back  []coord.KnownKey   // scratch: the done and failed ones the store knows
	stats doneLookupCounters // for tests and logs

	looker  *looker            // the lookup goroutine (lookup.go)
	parked  []*parkedMsg       // messages waiting for lookups, in arrival order
	items   int                // keys and jobs the parked messages carry (parkedItemBudget)
	budget  int                // tests: a parkedItemBudget of their own (0: the constant)
	waiting map[id.Session]int // parked messages per session
}

// parkedMsg is a message waiting for its keys' lookup (or for its
// session's earlier messages).
type parkedMsg struct {
	ident []byte
	sid   id.Session
	m     wire.Message
	// keys to look up; the lookup goroutine fills them in and sets looked
	// (handed back under its lock), err when the store could not be read.
	keys   []store.KeyLookup
	looked bool
	err    error
	// queued: with paging, the records of its keys found queued (paged
	// out with their jobs), read by the lookup goroutine too.
	queued []coord.QueuedKey
	// norms: its keys' normal forms and fingerprints, worked out by the
	// Unknown that parked it, for its operation (coord.Normals).
	norms coord.Normals
	// lastJob is the last job id when it was parked: the pager leaves the
	// jobs made since in memory while it waits (their keys may be its own,
	// found absent by its lookup). gen is the pager's count of page-outs
	// (pager.outs) when its keys were last looked at (relook).
	lastJob broker.JobID
	gen     uint64
	// step is the reactor step that read it (Stats.Steps): the step's
	// budget (stepItemBudget) counted it then, so that a pipelined flood
	// is read a budget at a time, not parked whole before anything is
	// answered; a later step that releases it counts it again.
	step uint64
}

// doneLookupCounters count the store lookups of the bounded done set.
type doneLookupCounters struct {
	Lookups uint64 // keys looked up in the store
	Hits    uint64 // of them, done or failed keys given back to the coordinator
	// Relooked counts parked messages looked up again because paging put
	// some of their keys out of memory while they waited (relook).
	Relooked uint64
}

// on reports whether messages' keys are looked up in the store: the done
// set is bounded, or queued jobs are paged out with their keys.
func (l *doneLookup) on() bool { return l.bounded || l.pg != nil }

// mark notes that store batch seq carries the writes of the last Ready
// (called by persist when it applies one).
func (l *doneLookup) mark(seq uint64) {
	if l.bounded {
		l.marks = append(l.marks, batchMark{store: seq, writes: l.c.WriteBatch()})
	}
}

// durableUpTo tells the coordinator that the writes of every store batch
// up to done are durable (called by release).
func (l *doneLookup) durableUpTo(done uint64) {
	if !l.bounded {
		return
	}
	n := 0
	for n < len(l.marks) && l.marks[n].store <= done {
		n++
	}
	if n == 0 {
		return
	}
	l.c.WritesDurable(l.marks[n-1].writes)
	m := copy(l.marks, l.marks[n:])
	l.marks = l.marks[:m]
}

// park is called for every keyed message of a live session before it
// reaches the coordinator (step is the reactor step that read it): it
// extracts the message's keys once and asks
// the coordinator which it has no record of (Unknown, a map probe per key).
// When there are none and nothing of the session waits, it reports false:
// the caller handles m at once. Otherwise m waits (parked) and it reports
// true: the keys go to the lookup goroutine (lookup.go), which reads them
// from the store in batches off the reactor, and releaseLookups hands the
// done and failed ones to the coordinator (KnownDone) and then m, in the
// order the session sent its messages. Other sessions are served
// meanwhile: the reactor never waits for the store's reads.
func (l *doneLookup) park(ident []byte, sid id.Session, m wire.Message, step uint64) bool {
	if !l.on() {
		return false
	}
	if _, beat := m.(*wire.Heartbeat); beat {
		return false // it carries nothing: no order to keep
	}
	keys, scratch := l.keysOf(m)
	l.fps = l.fps[:0]
	if len(keys) > 0 {
		l.fps = l.c.Unknown(keys, l.fps)
	}
	if scratch {
		clear(keys) // drop the strings
		l.keys = keys[:0]
	}
	if len(l.fps) == 0 && l.waiting[sid] == 0 {
		return false
	}
	wire.OwnKeys(m) // kept past the reactor decoder's next message
	p := &parkedMsg{ident: ident, sid: sid, m: m, norms: l.c.TakeNormals(), step: step, lastJob: l.c.LastJob()}
	if l.pg != nil {
		p.gen = l.pg.outs
	}
	if len(l.fps) > 0 {
		p.keys = make([]store.KeyLookup, len(l.fps))
		for i, fp := range l.fps {
			p.keys[i].FP = fp
		}
		l.looker.post(p)
	} else {
		p.looked = true // it waits only for its session's earlier messages
	}
	if l.waiting == nil {
		l.waiting = make(map[id.Session]int)
	}
	l.waiting[sid]++
	l.parked = append(l.parked, p)
	l.items += itemsOf(m)
	return true
}

// keysOf are the keys message m names (nil for a message without any);
// scratch says they were gathered into the reactor's scratch slice, to be
// cleared after use.
func (l *doneLookup) keysOf(m wire.Message) (keys []id.Key, scratch bool) {
	switch m := m.(type) {
	case *wire.Request:
		return m.Keys, false
	case *wire.Queue:
		return m.Keys, false
	case *wire.Done:
		keys = l.keys[:0]
		for i := range m.Items {
			keys = append(keys, m.Items[i].Key)
		}
	case *wire.Submit:
		keys = l.keys[:0]
		for i := range m.Jobs {
			keys = append(keys, m.Jobs[i].Key)
		}
	case *wire.Result:
		keys = l.keys[:0]
		for i := range m.Items {
			for j := range m.Items[i].Links {
				keys = append(keys, m.Items[i].Links[j].Key)
			}
		}
	default:
		return nil, false
	}
	return keys, true
}

// relook reports whether parked message p must wait for another lookup
// before it reaches the coordinator: paging put keys it names out of
// memory since it was parked (the coordinator knew them then, or they
// came after), and the coordinator would take them for absent: a resent
// SUBMIT parked behind its session's earlier messages made a second job
// for each key its first send had queued and paging had put out meanwhile.
// Unknown names them now (the filter has them); those it did not look up
// are looked up with the rest. The keys it did look up and found absent
// stay absent: a key made after p was parked is not paged out while p
// waits (the ceiling of pager.out).
func (l *doneLookup) relook(p *parkedMsg) bool {
	if l.pg == nil || p.err != nil || p.gen == l.pg.outs {
		return false
	}
	p.gen = l.pg.outs
	keys, scratch := l.keysOf(p.m)
	l.fps = l.c.Unknown(keys, l.fps[:0])
	p.norms = l.c.TakeNormals() // Unknown worked them out again
	if scratch {
		clear(keys)
		l.keys = keys[:0]
	}
	if len(l.fps) == 0 {
		return false
	}
	slices.SortFunc(p.keys, func(a, b store.KeyLookup) int { return bytes.Compare(a.FP[:], b.FP[:]) })
	n := len(p.keys)
	for _, fp := range l.fps {
		if _, found := slices.BinarySearchFunc(p.keys[:n], fp, func(k store.KeyLookup, fp id.Fingerprint) int { return bytes.Compare(k.FP[:], fp[:]) }); !found {
			p.keys = append(p.keys, store.KeyLookup{FP: fp})
		}
	}
	if len(p.keys) == n {
		return false
	}
	l.stats.Relooked++
	p.looked, p.queued = false, nil
	l.looker.post(p)
	return true
}

// full reports whether the parked messages carry their budget of keys and
// jobs (parkedItemBudget): the reactor then reads no more messages.
func (l *doneLookup) full() bool {
	if l == nil {
		return false // no store: nothing parked
	}
	b := l.budget
	if b == 0 {
		b = parkedItemBudget
	}
	return l.items >= b
}

// released reports whether the first parked message's lookups are done:
// releaseLookups stopped at the step's budget, and the reactor must not
// wait.
func (l *doneLookup) released() bool {
	return l != nil && len(l.parked) > 0 && l.parked[0].looked
}

// releaseLookups takes the lookups the lookup goroutine finished and
// hands the parked messages to the coordinator in the order they came, as
// far as their lookups are done. A message of a session that ended
// meanwhile is dropped (its sender resends it on its next session). A
// store that could not be read answers the message ERROR 500 (answering it
// without the records could hand out finished work again) and records the
// store's failure, which stops the reactor. The messages go to the peers
// part pd, in the reactor r's step.
func (d *durable) releaseLookups(now time.Time, r *reactor, pd *peerDialogue) {
	if d == nil {
		return
	}
	l := &d.look
	if len(l.parked) == 0 {
		return
	}
	l.looker.collect()
	n := 0
	for ; n < len(l.parked) && l.parked[n].looked && !r.overBudget(); n++ {
		p := l.parked[n]
		if l.relook(p) {
			break // it waits for its keys again, and the messages behind it
		}
		l.items -= itemsOf(p.m)
		if l.waiting[p.sid]--; l.waiting[p.sid] == 0 {
			delete(l.waiting, p.sid)
		}
		if p.err != nil {
			err := fmt.Errorf("look up done keys: %w", p.err)
			d.mu.Lock()
			if d.err == nil {
				d.err = err
			}
			d.mu.Unlock()
			d.out.toPeer(p.ident, storeFailedError(p.m.RequestID(), err))
			continue
		}
		l.giveBack(p.keys, p.queued)
		p.queued = nil
		if sid, ok := d.sess.ident[string(p.ident)]; ok && sid == p.sid && d.c.Known(sid) {
			if p.step != r.stats.Steps {
				r.stepItems += itemsOf(p.m) // read in an earlier step
			}
			d.c.UseNormals(p.norms) // its keys are not normalised again
			pd.message(now, p.ident, p.sid, p.m)
			r.handled() // inputs.go
		}
		p.norms = coord.Normals{}
	}
	if n > 0 {
		m := copy(l.parked, l.parked[n:])
		clear(l.parked[m:])
		l.parked = l.parked[:m]
	}
}

// giveBack hands the coordinator the done and failed records of looked-up
// keys (KnownDone), and with paging the queued keys the lookup goroutine
// read back (KnownQueued; paging.go): the reactor reads nothing itself.
func (l *doneLookup) giveBack(keys []store.KeyLookup, queued []coord.QueuedKey) {
	back := l.back[:0]
	for _, k := range keys {
		l.stats.Lookups++
		if k.Found && (k.State == store.KeyDone || k.State == store.KeyFailed) {
			back = append(back, coord.KnownKey{FP: k.FP, At: k.At, Failed: k.State == store.KeyFailed})
		}
	}
	l.stats.Hits += uint64(l.c.KnownDone(back))
	if len(queued) > 0 {
		l.c.KnownQueued(queued)
	}
	l.back = back[:0]
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
func (d *durable) storeExpired() {
	d.mu.Lock()
	fps := d.expired
	d.expired = nil
	d.mu.Unlock()
	if len(fps) > 0 && d.look.bounded {
		d.look.c.StoredExpired(fps)
	}
}
