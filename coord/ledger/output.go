package ledger

import (
	"fmt"
	"time"

	"drover/coord/id"
)

// Answer is a deferred answer to a request that got Wait: send it to
// Session, quoting ReqID and FP.
type Answer struct {
	Session id.Session     // the waiting session to answer
	ReqID   uint64         // its request id (the newest, if it asked again)
	FP      id.Fingerprint // the key it asked for
	Verdict Verdict        // OK (handover) or No (queued, done, failed)
	Reason  Reason         // handover, queued, done or failed
}

// TakeAnswers appends to dst the deferred answers produced since the last
// call, in the order they were produced, and forgets them.
func (l *Ledger) TakeAnswers(dst []Answer) []Answer {
	dst = append(dst, l.answers...)
	l.answers = l.answers[:0]
	return dst
}

// EventKind says what changed.
type EventKind uint8

// The event kinds.
const (
	EventRequested EventKind = iota + 1 // Session now holds FP (it was absent)
	EventWaiting                        // Session joined FP's waiter queue
	EventQueued                         // Session queued FP
	EventDone                           // FP is done; Reason is "done" or "failed"
	EventHandover                       // FP passed to Session, the next waiter; Reason is "released" or "expired"
	EventExpired                        // Session's lease on FP ran out
	EventReleased                       // Session was released while holding FP
	EventLeft                           // Session was released while waiting on FP
)

// String names the kind ("requested", "waiting", ...).
func (k EventKind) String() string {
	switch k {
	case EventRequested:
		return "requested"
	case EventWaiting:
		return "waiting"
	case EventQueued:
		return "queued"
	case EventDone:
		return "done"
	case EventHandover:
		return "handover"
	case EventExpired:
		return "expired"
	case EventReleased:
		return "released"
	case EventLeft:
		return "left"
	}
	return fmt.Sprintf("event(%d)", uint8(k))
}

// Event is one state change of one key. Session is 0 where no session is
// involved (done).
type Event struct {
	Kind    EventKind      // what happened
	Session id.Session     // the session it happened to; 0 for done
	FP      id.Fingerprint // the key
	Reason  Reason         // the cause, where there is one (see EventKind)
}

func (l *Ledger) event(k EventKind, s id.Session, fp id.Fingerprint, r Reason) {
	if !l.quiet {
		l.events = append(l.events, Event{Kind: k, Session: s, FP: fp, Reason: r})
	}
}

// maxIdleEvents is the most events' room kept between bursts (48 bytes
// each): a step of a busy server takes several batches of 1,000 keys,
// each key an event, and a room smaller than a step's events was
// allocated anew every step (under a REQUEST+QUEUE load, two fifths of
// what the server allocated).
const maxIdleEvents = 1 << 15

// TakeEvents appends to dst the events produced since the last call, in
// order, and forgets them.
func (l *Ledger) TakeEvents(dst []Event) []Event {
	dst = append(dst, l.events...)
	if cap(l.events) > maxIdleEvents {
		l.events = nil // a burst (a big batch) is over: release it
	} else {
		l.events = l.events[:0]
	}
	return dst
}

// WriteOp says what to do with a persisted record.
type WriteOp uint8

// The write operations. Records are keyed by fingerprint.
const (
	PutQueued WriteOp = iota + 1 // FP is queued since At; Key is set
	PutDone                      // FP is done since At with Outcome; Key is set when the caller gave it
	Delete                       // forget FP (a done record expired)
)

// String names the operation ("put-queued", "put-done", "delete").
func (o WriteOp) String() string {
	switch o {
	case PutQueued:
		return "put-queued"
	case PutDone:
		return "put-done"
	case Delete:
		return "delete"
	}
	return fmt.Sprintf("write(%d)", uint8(o))
}

// Write is a change to the durable part of the ledger (queued and done
// keys; requested keys are bound to live sessions and are not persisted).
type Write struct {
	Op      WriteOp        // put a queued or done record, or delete it
	FP      id.Fingerprint // the record's key in the store
	Key     id.Key         // the work key, when known (puts)
	At      time.Time      // when the key was queued or done, or when deleted
	Outcome Outcome        // PutDone's outcome
}

func (l *Ledger) write(op WriteOp, fp id.Fingerprint, k *id.Key, t int64, o Outcome) {
	if l.cfg.Persist && !l.quiet {
		l.addWrite(Write{Op: op, FP: fp, Key: *k, At: time.Unix(0, t).UTC(), Outcome: o})
	}
}

// TakeWrites appends to dst the records to persist since the last call, in
// order, and forgets them. Without Config.Persist there are none. Each call
// closes a write batch (see WriteBatch and WritesDurable).
func (l *Ledger) TakeWrites(dst []Write) []Write {
	l.wbatch++
	dst = append(dst, l.writes...)
	clear(l.writes) // drop the keys' strings
	l.writes = l.writes[:0]
	return dst
}

// Restore applies a persisted record while rebuilding the ledger on start,
// before sessions act; it produces no events and no writes. PutQueued
// makes the key queued since w.At, PutDone marks it done at w.At with
// w.Outcome (a done record already past its TTL is as if absent, and a
// later sweep deletes it, with a Delete write), Delete forgets a queued or
// done key. Records may come in any order; a key's last record wins. The
// sweep handles done records in the order they were restored, so restoring
// them in done-time order lets it reclaim them as soon as they expire.
func (l *Ledger) Restore(w Write) {
	l.quiet = true
	defer func() { l.quiet = false }()
	t := w.At.UnixNano()
	switch w.Op {
	case PutQueued:
		l.done.remove(w.FP)
		ri := l.idx.get(&w.FP)
		switch {
		case ri < 0: // queued, lent to its job
		case ri == 0:
			ri, _ = l.newRec(w.FP, &w.Key, Queued, t)
			l.queue.push(ri, l.atLQ)
		case l.recs.at(ri).state == Requested:
			l.toQueued(t, ri)
		}
	case PutDone:
		l.markDone(t, &w.Key, w.FP, w.Outcome)
	case Delete:
		l.done.remove(w.FP)
		if ri := l.idx.get(&w.FP); ri < 0 {
			l.dropLent(&w.FP, ri)
		} else if ri != 0 && l.recs.at(ri).state == Queued {
			l.queue.unlink(ri, l.atLQ)
			l.dropRec(ri)
		}
	}
}
