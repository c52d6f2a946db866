// Package ledger is the coordinator's table of work keys (DESIGN.md §2, seed
// 000): which keys are requested (and by which session, with a FIFO of
// sessions waiting for them), queued, or done (with an outcome).
//
// It is a pure state machine in the style of etcd-io/raft: no goroutines, no
// I/O, no clock. Every call takes the current time as a value; what the
// caller must do afterwards comes out as values it collects with
// TakeAnswers (deferred answers to waiting sessions), TakeEvents (state
// changes for the console and the monitor stream) and TakeWrites (records to
// persist). A Ledger is not safe for concurrent use: one goroutine (the
// reactor) owns it.
//
// The rules, exactly:
//
//   - Request on an absent key makes it requested, owned by the session: OK.
//     A re-request by the owner is OK again (idempotent). A request for a
//     key another session holds puts the session at the end of the key's
//     FIFO waiter queue: Wait, and the answer comes later through
//     TakeAnswers (a session already waiting is not queued twice; its
//     request id is updated to the newest). A queued key: No "queued". A
//     done key younger than its outcome's TTL: No "done" or No "failed";
//     older: as if absent.
//   - Queue by the owner of a requested key makes it queued; every waiter
//     gets a deferred No "queued". Anything else is an Error: "not-owner",
//     "unknown" (absent or expired) or "wrong-state" (queued or done).
//   - Done marks the key done with an outcome whatever its state, absent
//     included; every waiter gets a deferred No "done" (or "failed").
//   - Release (the session died, disconnected or was evicted) and the
//     expiry of a request lease after Config.RequestTTL hand each requested
//     key to the next waiter in line, which gets its deferred OK with reason
//     "handover" and a fresh lease; with no waiter the key is removed. A
//     released session also leaves every waiter queue it was in.
//
// Lease expiry is applied at the start of every call that carries a time, so
// the answers do not depend on how often Tick runs; Tick exists to act on
// expiries when nothing else happens (the reactor polls until NextDeadline)
// and to sweep expired done records out of memory a bounded batch at a time.
package ledger

import (
	"fmt"
	"time"

	"drover/coord/id"
	"drover/coord/offheap"
)

// Verdict is the answer to a request or a queue.
type Verdict uint8

// The verdicts.
const (
	OK    Verdict = iota + 1 // go ahead: the key is yours (request) or queued (queue)
	No                       // someone else has it, or it is done; Reason says which
	Wait                     // deferred: the answer comes later through TakeAnswers
	Error                    // the operation did not apply; Reason says why
)

// String names the verdict in lower case ("ok", "no", "wait", "error").
func (v Verdict) String() string {
	switch v {
	case OK:
		return "ok"
	case No:
		return "no"
	case Wait:
		return "wait"
	case Error:
		return "error"
	}
	return fmt.Sprintf("verdict(%d)", uint8(v))
}

// Reason qualifies a verdict or an event. Every No and every Error carries one.
type Reason string

// The reasons.
const (
	ReasonNone       Reason = ""            // a plain OK
	ReasonRequested  Reason = "requested"   // Wait: another session holds the key in requested
	ReasonQueued     Reason = "queued"      // the key is queued: someone is doing it
	ReasonDone       Reason = "done"        // the key is done (outcome ok) and not yet expired
	ReasonFailed     Reason = "failed"      // the key is done (outcome failed) and not yet expired
	ReasonNotOwner   Reason = "not-owner"   // queue by a session that does not hold the key
	ReasonUnknown    Reason = "unknown"     // queue of a key the ledger does not have
	ReasonWrongState Reason = "wrong-state" // queue of a key already queued or done
	ReasonOwner      Reason = "owner"       // OK again: the session already holds the key (idempotent re-request)
	ReasonHandover   Reason = "handover"    // deferred OK: the previous owner died or its lease expired
	ReasonExpired    Reason = "expired"     // a request lease ran out (events)
	ReasonReleased   Reason = "released"    // the owner's session was released (events)
	ReasonBadSession Reason = "bad-session" // session 0, which never names a peer
)

// String is the reason's token ("" for none).
func (r Reason) String() string { return string(r) }

// Outcome is how done work ended; each outcome has its own TTL.
type Outcome uint8

// The outcomes.
const (
	DoneOK     Outcome = iota // finished successfully
	DoneFailed                // failed for good (the broker gave up on it)
)

// String names the outcome ("ok" or "failed").
func (o Outcome) String() string {
	if o == DoneOK {
		return "ok"
	}
	return "failed"
}

// reason is the No reason a done key with this outcome gives.
func (o Outcome) reason() Reason {
	if o == DoneOK {
		return ReasonDone
	}
	return ReasonFailed
}

// State is the state of a key in the ledger.
type State uint8

// The states. An absent key has no State: Lookup reports it as not found.
const (
	Requested State = iota + 1 // held by a session that is deciding to do it
	Queued                     // handed to a queue (the broker's or an external one)
	Done                       // finished, with an Outcome, until its TTL passes
)

// String names the state ("requested", "queued", "done").
func (s State) String() string {
	switch s {
	case Requested:
		return "requested"
	case Queued:
		return "queued"
	case Done:
		return "done"
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// Config parameterises a Ledger. The zero value is valid: leases and done
// records never expire, nothing is persisted.
type Config struct {
	// RequestTTL is how long a session may hold a requested key before it
	// passes to the next waiter (or is removed). 0: until the session is
	// released.
	RequestTTL time.Duration
	// DoneTTL is how long a key done with outcome ok answers No "done";
	// after it, a request treats the key as absent. 0: forever. Done times
	// are kept to the second (rounded up, so a key never expires early),
	// so a non-zero TTL must be at least one second.
	DoneTTL time.Duration
	// FailedTTL is DoneTTL for keys done with outcome failed.
	FailedTTL time.Duration
	// Persist makes the ledger record, for TakeWrites, every change to
	// queued and done keys.
	Persist bool
	// SweepLimit bounds how many done records one Tick examines for expiry.
	// 0 means 4096.
	SweepLimit int
	// DoneCache bounds the done and failed records kept in memory when a
	// store holds them all (it needs Persist): beyond it, the oldest whose
	// writes are durable (WritesDurable) are evicted, and the caller
	// answers for them from its store (Known, KnownDone; see donecache.go).
	// 0: unbounded, every record stays in memory until its TTL.
	DoneCache int
	// StoredFilter, when positive, keeps a Bloom filter of the keys the
	// caller's store holds and memory does not (storedfilter.go), sized
	// for this many keys in its first stage (it grows in stages past
	// that, its false-positive rate below 0.8% throughout): MaybeStored
	// then spares the caller a store read for a key that is new. It needs
	// Persist. 0 or negative: no filter, every key memory does not know may
	// be stored (a server fills in a size for 0: net/server.New).
	StoredFilter int
	// SmallPages keeps the ledger's tables outside the Go heap on small
	// pages: they ask the OS for no transparent huge pages
	// (offheap.Mem.SmallPages). By default they ask for them.
	SmallPages bool
}

// maxTTL keeps expiry times well inside the 31-bit seconds of a done stamp.
const maxTTL = 30 * 365 * 24 * time.Hour

func (c *Config) validate() error {
	if c.RequestTTL < 0 {
		return fmt.Errorf("ledger config: RequestTTL is %v; want 0 (no expiry) or a positive duration", c.RequestTTL)
	}
	for _, f := range []struct {
		name string
		ttl  time.Duration
	}{{"DoneTTL", c.DoneTTL}, {"FailedTTL", c.FailedTTL}} {
		switch {
		case f.ttl < 0:
			return fmt.Errorf("ledger config: %s is %v; want 0 (forever) or a positive duration", f.name, f.ttl)
		case f.ttl > 0 && f.ttl < time.Second:
			return fmt.Errorf("ledger config: %s is %v; want 0 (forever) or at least 1s (done times are kept to the second)", f.name, f.ttl)
		case f.ttl > maxTTL:
			return fmt.Errorf("ledger config: %s is %v; want at most %v", f.name, f.ttl, maxTTL)
		}
	}
	if c.SweepLimit < 0 {
		return fmt.Errorf("ledger config: SweepLimit is %d; want 0 (default 4096) or a positive count", c.SweepLimit)
	}
	switch {
	case c.DoneCache < 0:
		return fmt.Errorf("ledger config: DoneCache is %d; want 0 (unbounded) or a positive count", c.DoneCache)
	case c.StoredFilter > 0 && !c.Persist:
		return fmt.Errorf("ledger config: StoredFilter is %d without Persist: no store holds keys; want Persist or StoredFilter 0", c.StoredFilter)
	case c.DoneCache > 0 && !c.Persist:
		return fmt.Errorf("ledger config: DoneCache is %d without Persist: evicted records would be lost; want Persist (a store behind the ledger) or DoneCache 0", c.DoneCache)
	}
	return nil
}

// Ledger is the table of work keys. Create one with New.
type Ledger struct {
	cfg      Config
	leaseTTL int64 // RequestTTL in nanoseconds

	idx   index     // requested and queued keys -> index in recs
	recs  slab[rec] // index 0 is unused so that 0 means "none"
	keys  keyStore  // the keys of recs
	lease list      // requested keys, oldest lease first
	queue list      // queued keys, in the order they were queued

	ws slab[waiter]    // index 0 unused
	wq map[int32]*list // the waiter FIFO of each record that has waiters

	// The links of each list (slab.go).
	atLQ, atOwn, atFIFO, atSW func(int32) *link

	sessIdx map[id.Session]int32 // sessions holding or waiting on keys -> index in sess
	sess    []session            // slab; index 0 unused
	freeS   int32
	lastS   id.Session // one-entry cache in front of sessIdx
	lastSI  int32

	jobs Jobs // the holder of the jobs queued keys are lent to (lend.go)
	lent int  // queued keys lent to their jobs

	done   doneSet
	stored *storedFilter // keys the store may hold and memory does not (nil: no filter)

	nWaiters int

	answers []Answer
	events  []Event
	writes  []Write
	wbatch  uint64 // the write batch being collected: TakeWrites calls so far + 1
	quiet   bool   // while restoring: no events, no writes
}

// New returns an empty ledger, or an error naming the first bad field of cfg.
func New(cfg Config) (*Ledger, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.SweepLimit == 0 {
		cfg.SweepLimit = 4096
	}
	l := &Ledger{
		cfg:      cfg,
		leaseTTL: int64(cfg.RequestTTL),
		sessIdx:  make(map[id.Session]int32),
		wq:       make(map[int32]*list),
		sess:     make([]session, 1, 16),
		wbatch:   1,
	}
	mem := offheap.New(l)
	if cfg.SmallPages {
		mem.SmallPages()
	}
	l.recs.mem, l.ws.mem = mem, mem
	l.recs.grow() // reserve index 0
	l.ws.grow()
	l.idx.init(mem, &l.recs, &l.jobs)
	l.keys.init(mem)
	l.bindLinks()
	l.done.init(cfg.DoneTTL, cfg.FailedTTL, cfg.DoneCache)
	if cfg.StoredFilter > 0 {
		l.stored = newStoredFilter(cfg.StoredFilter)
		if l.done.c != nil {
			l.done.c.filter = l.stored
		}
	}
	return l, nil
}

// Request asks for key k (fingerprint fp, which must be k.Fingerprint(): the
// ledger does not rehash) on behalf of session s; reqID is echoed in the
// deferred answer if the verdict is Wait. See the package comment for the
// rules.
func (l *Ledger) Request(now time.Time, s id.Session, reqID uint64, k id.Key, fp id.Fingerprint) (Verdict, Reason) {
	t := now.UnixNano()
	l.expireLeases(t)
	return l.request(t, s, reqID, &k, fp)
}

func (l *Ledger) request(t int64, s id.Session, reqID uint64, k *id.Key, fp id.Fingerprint) (Verdict, Reason) {
	if s == 0 {
		return Error, ReasonBadSession
	}
	if ri := l.idx.get(&fp); ri != 0 {
		if ri < 0 {
			return No, ReasonQueued // lent to its job (lend.go)
		}
		r := l.recs.at(ri)
		switch {
		case r.state == Queued:
			return No, ReasonQueued
		case l.sess[r.owner].id == s:
			return OK, ReasonOwner
		}
		l.wait(t, s, reqID, ri)
		return Wait, ReasonRequested
	}
	if v, ok := l.done.lookup(fp); ok {
		if !l.done.expired(v, t) {
			return No, stampOutcome(v).reason()
		}
		l.done.remove(fp) // as if absent
		if l.cfg.Persist && !l.quiet {
			l.addWrite(Write{Op: Delete, FP: fp, At: time.Unix(0, t).UTC()})
		}
	}
	si := l.session(s, true)
	ri, r := l.newRec(fp, k, Requested, t)
	r.owner = si
	l.lease.push(ri, l.atLQ)
	l.sess[si].held.push(ri, l.atOwn)
	l.event(EventRequested, s, fp, ReasonNone)
	return OK, ReasonNone
}

// wait puts s at the end of record ri's waiter queue, unless it is in it
// already, in which case only its request id is updated.
func (l *Ledger) wait(t int64, s id.Session, reqID uint64, ri int32) {
	if q := l.fifo(ri, false); q != nil {
		for wi := q.head; wi != 0; wi = l.ws.at(wi).fifo.next {
			if l.ws.at(wi).session == s {
				l.ws.at(wi).reqID = reqID
				return
			}
		}
	}
	si := l.session(s, true)
	wi := l.ws.alloc()
	w := l.ws.at(wi)
	w.session, w.reqID, w.since, w.rec = s, reqID, t, ri
	l.fifo(ri, true).push(wi, l.atFIFO)
	l.sess[si].waits.push(wi, l.atSW)
	l.nWaiters++
	l.event(EventWaiting, s, l.recs.at(ri).fp, ReasonNone)
}

// Queue records that session s, owner of the requested key fp, has queued
// it. It answers OK, or Error with "not-owner", "unknown" or "wrong-state".
// Every waiter of the key gets a deferred No "queued".
func (l *Ledger) Queue(now time.Time, s id.Session, fp id.Fingerprint) (Verdict, Reason) {
	t := now.UnixNano()
	l.expireLeases(t)
	return l.queueKey(t, s, fp)
}

func (l *Ledger) queueKey(t int64, s id.Session, fp id.Fingerprint) (Verdict, Reason) {
	ri := l.idx.get(&fp)
	if ri == 0 {
		if _, done := l.done.get(fp, t); done {
			return Error, ReasonWrongState
		}
		return Error, ReasonUnknown
	}
	if ri < 0 {
		return Error, ReasonWrongState // queued, lent to its job
	}
	r := l.recs.at(ri)
	switch {
	case r.state != Requested:
		return Error, ReasonWrongState
	case l.sess[r.owner].id != s:
		return Error, ReasonNotOwner
	}
	l.toQueued(t, ri)
	return OK, ReasonNone
}

// toQueued moves requested record ri to queued: its waiters are answered No
// "queued", it leaves its owner and the lease list.
func (l *Ledger) toQueued(t int64, ri int32) {
	l.answerWaiters(ri, ReasonQueued)
	r := l.recs.at(ri)
	si := r.owner
	owner := l.sess[si].id
	l.sess[si].held.unlink(ri, l.atOwn)
	l.gcSession(si)
	l.lease.unlink(ri, l.atLQ)
	r.state, r.owner, r.since = Queued, 0, t
	l.queue.push(ri, l.atLQ)
	l.event(EventQueued, owner, r.fp, ReasonNone)
	if l.cfg.Persist && !l.quiet {
		k := l.keys.key(r)
		l.write(PutQueued, r.fp, &k, t, DoneOK)
	}
}

// Done marks key k (fingerprint fp) done with outcome o, whatever its state,
// absent included; every waiter gets a deferred No "done" (or "failed" for
// DoneFailed). An outcome other than DoneOK counts as DoneFailed.
func (l *Ledger) Done(now time.Time, k id.Key, fp id.Fingerprint, o Outcome) {
	t := now.UnixNano()
	l.expireLeases(t)
	l.markDone(t, &k, fp, o)
	l.sweepDone(t, 2) // keep up with expiries even when Tick is rare
}

func (l *Ledger) markDone(t int64, k *id.Key, fp id.Fingerprint, o Outcome) {
	if o != DoneOK {
		o = DoneFailed
	}
	if ri := l.idx.get(&fp); ri < 0 {
		l.dropLent(&fp, ri)
	} else if ri != 0 {
		l.answerWaiters(ri, o.reason())
		r := l.recs.at(ri)
		if r.state == Requested {
			si := r.owner
			l.sess[si].held.unlink(ri, l.atOwn)
			l.gcSession(si)
			l.lease.unlink(ri, l.atLQ)
		} else {
			l.queue.unlink(ri, l.atLQ)
		}
		l.dropRec(ri)
	}
	l.done.put(fp, t, o, l.batch())
	l.event(EventDone, 0, fp, o.reason())
	l.write(PutDone, fp, k, t, o)
}

// answerWaiters gives every waiter of record ri a deferred No with reason,
// in FIFO order, and empties the queue.
func (l *Ledger) answerWaiters(ri int32, reason Reason) {
	q := l.fifo(ri, false)
	if q == nil {
		return
	}
	for wi := q.head; wi != 0; {
		w := *l.ws.at(wi)
		l.answers = append(l.answers, Answer{Session: w.session, ReqID: w.reqID, FP: l.recs.at(ri).fp, Verdict: No, Reason: reason})
		si := l.session(w.session, false)
		l.sess[si].waits.unlink(wi, l.atSW)
		l.gcSession(si)
		l.ws.release(wi)
		l.nWaiters--
		wi = w.fifo.next
	}
	*q = list{}
	l.dropFIFO(ri)
}

// Release lets go of everything session s holds: it leaves every waiter
// queue it is in, and each key it holds in requested passes to the next
// waiter (deferred OK "handover") or, with none, is removed. Call it when
// the session died, disconnected or was evicted. Releasing an unknown
// session does nothing.
func (l *Ledger) Release(now time.Time, s id.Session) {
	t := now.UnixNano()
	l.expireLeases(t)
	si := l.session(s, false)
	if si == 0 {
		return
	}
	ss := l.sess[si]
	for wi := ss.waits.head; wi != 0; {
		w := *l.ws.at(wi)
		l.fifo(w.rec, false).unlink(wi, l.atFIFO)
		l.dropFIFO(w.rec)
		l.event(EventLeft, s, l.recs.at(w.rec).fp, ReasonReleased)
		l.ws.release(wi)
		l.nWaiters--
		wi = w.sw.next
	}
	for ri := ss.held.head; ri != 0; {
		r := l.recs.at(ri)
		next := r.own.next
		r.own = link{}
		l.event(EventReleased, s, r.fp, ReasonReleased)
		l.handOver(t, ri, ReasonReleased)
		ri = next
	}
	l.sess[si].held, l.sess[si].waits = list{}, list{}
	l.gcSession(si)
}

// handOver passes requested record ri, already detached from its previous
// owner's list, to its first waiter, or removes it if there is none. cause
// says why (released or expired) in the handover event.
func (l *Ledger) handOver(t int64, ri int32, cause Reason) {
	l.lease.unlink(ri, l.atLQ)
	r := l.recs.at(ri)
	q := l.fifo(ri, false)
	if q == nil {
		l.dropRec(ri)
		return
	}
	wi := q.head
	w := *l.ws.at(wi)
	si := l.session(w.session, false)
	q.unlink(wi, l.atFIFO)
	l.dropFIFO(ri)
	l.sess[si].waits.unlink(wi, l.atSW)
	l.ws.release(wi)
	l.nWaiters--
	r.owner, r.since = si, t
	l.lease.push(ri, l.atLQ)
	l.sess[si].held.push(ri, l.atOwn)
	l.answers = append(l.answers, Answer{Session: w.session, ReqID: w.reqID, FP: r.fp, Verdict: OK, Reason: ReasonHandover})
	l.event(EventHandover, w.session, r.fp, cause)
}

// Tick advances time: request leases older than RequestTTL expire (their
// keys pass to the next waiter, or are removed), at most
// Config.SweepLimit done records are examined and dropped if expired, and
// a growing index moves a bounded part of its old table.
func (l *Ledger) Tick(now time.Time) {
	t := now.UnixNano()
	l.expireLeases(t)
	l.sweepDone(t, l.cfg.SweepLimit)
	l.idx.x.Step(tickMove) // a growing index's move goes on when no key comes
}

// tickMove is how many positions of a growing index's old table a Tick
// moves (a few hundred microseconds at most).
const tickMove = 1 << 14

// expireLeases applies every lease expiry due at t. Leases are kept oldest
// first, so this costs one comparison when nothing is due.
func (l *Ledger) expireLeases(t int64) {
	if l.leaseTTL == 0 {
		return
	}
	for ri := l.lease.head; ri != 0 && l.recs.at(ri).since+l.leaseTTL <= t; ri = l.lease.head {
		r := l.recs.at(ri)
		si := r.owner
		owner := l.sess[si].id
		l.sess[si].held.unlink(ri, l.atOwn)
		l.event(EventExpired, owner, r.fp, ReasonExpired)
		l.handOver(t, ri, ReasonExpired)
		l.gcSession(si)
	}
}

// NextDeadline returns the earliest time a request lease expires, if any
// requested key has a lease: the reactor's poll timeout.
func (l *Ledger) NextDeadline() (time.Time, bool) {
	if l.leaseTTL == 0 || l.lease.head == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, l.recs.at(l.lease.head).since+l.leaseTTL).UTC(), true
}

// sweepDone examines at most limit done records for expiry, dropping the
// expired ones (and recording their deletion when persisting).
func (l *Ledger) sweepDone(t int64, limit int) {
	l.done.sweep(t, limit, func(fp id.Fingerprint) {
		if l.cfg.Persist && !l.quiet {
			l.addWrite(Write{Op: Delete, FP: fp, At: time.Unix(0, t).UTC()})
		}
	})
}
