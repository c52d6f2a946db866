package coord

import (
	"slices"
	"time"

	"drover/admin"
	"drover/coord/broker"
	"drover/coord/id"
	"drover/coord/ledger"
)

// Answer is a deferred answer: the verdict on a key a session waited for,
// correlated by the request id of its REQUEST or SUBMIT. For a SUBMIT that
// waited, Job is the job id when the key was handed over and enqueued.
type Answer struct {
	Session id.Session
	ReqID   uint64
	FP      id.Fingerprint
	Verdict ledger.Verdict
	Reason  ledger.Reason
	Submit  bool         // the answer is to a SUBMIT
	Job     broker.JobID // Submit && Verdict == OK: the new job
}

// Close asks the transport to end a session (DISCONNECT with Reason) and
// forget its identity. Lost sessions are not told (they are gone).
type Close struct {
	Session id.Session
	Reason  CloseReason
}

// Lost reports whether the session died (went silent) rather than left.
func (c Close) Lost() bool { return c.Reason == CloseLost }

// Cancel asks the transport to tell a worker session CANCEL for a run an
// operator took from it (its late RESULT will be stale). The transport
// sends a step's Cancels before its Jobs: a worker never receives a new
// attempt of a job before the CANCEL of the old one.
type Cancel struct {
	Session id.Session
	Run     broker.Run
	Reason  string // why, for the worker's log ("": requeued by an operator)
}

// Output is everything the transport has to carry out after a step. It is
// valid until the next call to Ready.
type Output struct {
	Answers  []Answer
	Jobs     []broker.Assignment // dispatches into free worker slots
	Closes   []Close
	Cancels  []Cancel          // jobs taken from running workers
	Finished []broker.Finished // terminal job outcomes (for result sinks)
	Events   []admin.Event     // numbered state changes (monitor stream)
	// Writes are the durable changes of the step, to persist as one
	// atomic batch (Config.Persist; see persist.go): ledger keys, then
	// jobs, then meta counters. With Ledger.Persist alone, ledger keys only.
	Writes []Record
	// Changed says state visible to a console changed since the last Ready.
	Changed bool
}

// Ready runs the deferred work of the inputs since the last call — terminal
// jobs marked in the ledger, hand-overs answered, waiting submits enqueued,
// free slots filled — and returns what the transport must do.
func (c *Coordinator) Ready(now time.Time) *Output {
	out := &c.out
	// The last step's values go: kept beyond their length they would pin
	// what their strings and outputs came from until a bigger step
	// overwrote them; and the room a burst (a 10,000-job batch) needed is
	// released, so that memory does not depend on how work was batched.
	out.Answers = reuse(out.Answers)
	out.Jobs = reuse(out.Jobs)
	out.Finished = reuse(out.Finished)
	out.Events = reuse(out.Events)
	out.Writes = reuse(out.Writes)
	c.scratch.levents = reuseUpTo(c.scratch.levents, maxIdleKeyEvents)
	out.Closes = append(out.Closes[:0], c.closes...)
	out.Cancels = append(out.Cancels[:0], c.cancels...)
	c.cancels = c.cancels[:0]
	c.closes = c.closes[:0]

	// Terminal jobs mark their keys done or failed in the ledger.
	sc := &c.scratch
	sc.finished = c.brk.TakeFinished(sc.finished[:0])
	if c.mem == nil && len(sc.finished) > 1 {
		c.doneBatches(now, sc.finished) // a backend kept elsewhere: a round trip per outcome, not per job
	} else {
		for _, f := range sc.finished {
			o := ledger.DoneOK
			if f.Failed {
				o = ledger.DoneFailed
			}
			c.led.Done(now, f.Key, f.FP, o)
		}
	}
	c.finishShared(now, sc.finished) // shared.go
	c.shareBackoffs(now)
	out.Finished = append(out.Finished, sc.finished...)

	// Workers the broker closed (evicted, drained) leave as sessions too.
	sc.closed = c.brk.TakeClosed(sc.closed[:0])
	for _, cl := range sc.closed {
		if _, ok := c.endSession(now, cl.Session); ok {
			why := CloseEvicted
			if cl.Drained {
				why = CloseDrained
			}
			out.Closes = append(out.Closes, Close{Session: cl.Session, Reason: why})
		}
	}

	// Deferred ledger answers; waiting submits that got their key enqueue.
	sc.answers = c.led.TakeAnswers(sc.answers[:0])
	c.addAnswers(now, sc.answers)
	// Enqueueing a granted submit queues its key, which answers that key's
	// other waiters No: pass those on too.
	for more := c.led.TakeAnswers(sc.answers[:0]); len(more) > 0; more = c.led.TakeAnswers(more[:0]) {
		c.addAnswers(now, more)
		sc.answers = more
	}

	if !c.brk.Paused() {
		out.Jobs = c.brk.Dispatch(now, out.Jobs)
	}

	c.collectEvents(now)
	out.Writes = c.collectWrites(now, out.Writes) // durability hook (persist.go); after collectEvents, which it reads
	out.Changed = len(out.Events) > 0 || len(out.Jobs) > 0 || len(out.Closes) > 0
	return out
}

// maxIdle is the most elements' room an output slice keeps between steps.
const maxIdle = 4096

// maxIdleKeyEvents is the most room for the ledger's events kept between
// steps (48 bytes each, as the ledger keeps for its own): a busy step's
// key events (a REQUEST or QUEUE of 1,000 keys is 1,000 of them, and a
// step takes several) were past maxIdle, so their room was allocated anew
// every step (under a REQUEST+QUEUE load, a fifth of what the server
// allocated).
const maxIdleKeyEvents = 1 << 15

// reuse empties s for the next step: cleared, and released if a burst left
// it bigger than maxIdle.
func reuse[T any](s []T) []T { return reuseUpTo(s, maxIdle) }

// reuseUpTo is reuse with room for up to max elements kept.
func reuseUpTo[T any](s []T, max int) []T {
	if cap(s) > max {
		return nil
	}
	clear(s)
	return s[:0]
}

func (c *Coordinator) dropPending(s id.Session) {
	for k := range c.pending {
		if k.session == s {
			delete(c.pending, k)
		}
	}
}

// answer turns a ledger answer into the coordinator's, enqueueing the job of
// a waiting SUBMIT that has just been granted its key.
// addAnswers passes ledger answers on. An answer to a session that has
// gone since (a key handed over to it, then released again by its death in
// the same step) is dropped: nobody is there to hear it, and its pending
// submits went with it.
func (c *Coordinator) addAnswers(now time.Time, as []ledger.Answer) {
	for _, a := range as {
		if _, ok := c.sessions[a.Session]; !ok {
			continue
		}
		c.out.Answers = append(c.out.Answers, c.answer(now, a))
	}
}

func (c *Coordinator) answer(now time.Time, a ledger.Answer) Answer {
	out := Answer{Session: a.Session, ReqID: a.ReqID, FP: a.FP, Verdict: a.Verdict, Reason: a.Reason}
	pk := pendingKey{a.Session, a.FP}
	p, ok := c.pending[pk]
	if !ok {
		return out
	}
	delete(c.pending, pk)
	out.Submit = true
	if a.Verdict == ledger.OK {
		sv := c.enqueue(now, a.Session, &p.spec)
		out.Job = sv.Job
		if sv.Status != Accepted {
			out.Verdict, out.Reason = ledger.Error, sv.Reason
		}
		if sv.Reason == ReasonJobIDs {
			c.noteIDRefusals(now, 1)
		}
	} else {
		c.dedupHits++
	}
	return out
}

// collectEvents numbers the sub-machines' events and keeps the recent ones.
// Key events go into the output only while PublishKeyEvents is on; off, a
// step builds only those the event ring keeps.
func (c *Coordinator) collectEvents(now time.Time) {
	out := &c.out
	start := len(out.Events)
	out.Events = c.brk.TakeEvents(out.Events)
	out.Events = append(out.Events, c.extra...)
	clear(c.extra)
	c.extra = c.extra[:0]
	lev := c.led.TakeEvents(c.scratch.levents[:0])
	c.scratch.levents = lev
	// Only the newest events of a big step reach the ring: it keeps
	// EventBuffer events, the older ones would be overwritten at once.
	own := len(out.Events) - start
	firstRing := own + len(lev) - len(c.events.buf) // step index of the first event the ring keeps
	for i := range own {
		c.seq++
		ev := &out.Events[start+i]
		ev.Seq = c.seq
		if ev.At.IsZero() {
			ev.At = now
		}
		if i >= firstRing {
			c.events.add(*ev)
		}
	}
	if c.keyEvents {
		// One allocation for the step's events, however many keys it
		// moved (a REQUEST of 1,000 keys makes 1,000 events).
		out.Events = slices.Grow(out.Events, len(lev))
		for j, e := range lev {
			c.seq++
			ev := c.ledgerEvent(now, e)
			ev.Seq = c.seq
			ev.Key = e.FP.String()
			out.Events = append(out.Events, ev)
			if own+j >= firstRing {
				c.events.add(ev)
			}
		}
		return
	}
	skip := min(len(lev), max(0, firstRing-own))
	c.seq += uint64(skip) // numbered all the same
	for _, e := range lev[skip:] {
		c.seq++
		ev := c.ledgerEvent(now, e)
		ev.Seq = c.seq
		c.events.addKey(ev, e.FP) // its Key made when read
	}
}

// PublishKeyEvents says whether Output.Events carries the ledger's key
// events (key.requested, key.queued, ...: the default) or only the
// broker's and the coordinator's own. A transport that has nobody to give
// key events to turns them off: a step then builds only the newest
// EventBuffer of them, for the events view, however many keys it moved.
// Events are numbered the same either way.
func (c *Coordinator) PublishKeyEvents(on bool) { c.keyEvents = on }

// keyKinds are the kinds of ledger events as the event stream names them.
var keyKinds = [...]admin.EventKind{
	ledger.EventRequested: admin.EventKeyRequested,
	ledger.EventWaiting:   admin.EventKeyWaiting,
	ledger.EventQueued:    admin.EventKeyQueued,
	ledger.EventDone:      admin.EventKeyDone,
	ledger.EventHandover:  admin.EventKeyHandover,
	ledger.EventExpired:   admin.EventKeyExpired,
	ledger.EventReleased:  admin.EventKeyReleased,
	ledger.EventLeft:      admin.EventKeyLeft,
}

func (c *Coordinator) ledgerEvent(now time.Time, e ledger.Event) admin.Event {
	var kind admin.EventKind
	if int(e.Kind) < len(keyKinds) && keyKinds[e.Kind] != "" {
		kind = keyKinds[e.Kind]
	} else {
		kind = admin.EventKind(admin.KeyTopic + e.Kind.String()) // a kind added to the ledger but not here
	}
	ev := admin.Event{At: now, Kind: kind} // Key: the caller's (collectEvents)
	if e.Session != 0 {
		if ss, ok := c.sessions[e.Session]; ok {
			ev.Detail = ss.detail
		} else {
			ev.Detail = "session " + sessionName(e.Session) // gone in this step
		}
	}
	if e.Reason != "" {
		if ev.Detail != "" {
			ev.Detail += ": "
		}
		ev.Detail += string(e.Reason)
	}
	return ev
}
