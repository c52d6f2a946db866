package broker

import (
	"strconv"
	"time"

	"drover/admin"
	"drover/backoff"
)

// The death policy (docs/PROTOCOL.md §9, README "When workers die").
//
// A worker that dies (goes silent for heartbeat × liveness, or vanishes so
// that its JOB cannot be delivered) gives back every job it held at once.
// Its death is charged to those jobs (one failure each, from the budget
// shared with internal failures) only when the worker was proven healthy:
// it had reported at least one result since it registered. A worker that
// takes jobs and dies before reporting anything proves nothing about them
// (it may have been broken, or killed): its jobs go back uncharged, so
// churning workers never fail a healthy job, while a job that keeps
// killing healthy workers still fails once its budget is spent.
//
// Such an early death counts against the worker id instead: from the
// second consecutive one the id is held back (HoldbackStart, doubling per
// further early death, capped at HoldbackCap) — a session with that id may
// register but is given no job until the hold ends. A result reported by
// the id clears its record. Records of ids quiet for HoldbackForgive are
// dropped.

// idRecord is what the broker remembers about a worker id across its
// sessions: consecutive early deaths and the hold they earned.
type idRecord struct {
	early int   // consecutive deaths holding jobs with no result reported
	until int64 // held back until (Unix ns); 0 when not held
	last  int64 // the last early death (Unix ns)
}

// died applies the death policy to worker w, which is dying holding its
// jobs: it reports whether the death is charged to them, and counts an
// early death against the worker's id.
func (b *Broker) died(w *worker, now time.Time, t int64) (charged bool) {
	if w.results > 0 {
		return true
	}
	if len(w.held) == 0 {
		return false
	}
	rec := b.ids[w.id]
	if rec == nil {
		rec = &idRecord{}
		b.ids[w.id] = rec
	}
	rec.early++
	rec.last = t
	if rec.early >= 2 {
		// HoldbackStart after the second early death, doubling with each
		// further one, capped; no jitter.
		d := backoff.Policy{Start: b.cfg.HoldbackStart, Cap: b.cfg.HoldbackCap}.Delay(rec.early-1, nil)
		rec.until = t + int64(d)
		b.emit(admin.Event{At: now, Kind: admin.EventWorkerHeldBack, Worker: w.id,
			Detail: strconv.Itoa(rec.early) + " deaths in a row before a first result: no jobs for " + d.String()})
	}
	return false
}

// proven records that worker w reported a result: its id's record of
// early deaths is cleared.
func (b *Broker) proven(w *worker) {
	w.results++
	if w.results == 1 && len(b.ids) > 0 {
		delete(b.ids, w.id)
	}
}

// holdOnRegister holds a registering worker back when its id earned it.
func (b *Broker) holdOnRegister(w *worker, t int64) {
	if rec := b.ids[w.id]; rec != nil && rec.until > t {
		w.heldUntil = rec.until
		b.held = append(b.held, w)
	}
}

// releaseHolds lets the held-back workers whose hold has ended take jobs,
// and forgets id records quiet for HoldbackForgive.
func (b *Broker) releaseHolds(t int64) {
	kept := b.held[:0]
	for _, w := range b.held {
		switch {
		case b.sessions[w.session] != w: // gone meanwhile
		case w.heldUntil <= t:
			w.heldUntil = 0
			b.syncReady(w)
		default:
			kept = append(kept, w)
			continue
		}
	}
	clear(b.held[len(kept):])
	b.held = kept
	if len(b.ids) > 0 && t-b.idSweep >= int64(b.cfg.HoldbackForgive)/8 {
		b.idSweep = t
		for id, rec := range b.ids {
			if rec.until <= t && t-rec.last >= int64(b.cfg.HoldbackForgive) {
				delete(b.ids, id)
			}
		}
	}
}

// nextHold is when the earliest hold ends (false when none is pending).
func (b *Broker) nextHold() (int64, bool) {
	var d int64
	for _, w := range b.held {
		if d == 0 || w.heldUntil < d {
			d = w.heldUntil
		}
	}
	return d, d != 0
}

// HeldBack reports until when worker id is held back after early deaths
// (false when it is not).
func (b *Broker) HeldBack(id string, now time.Time) (time.Time, bool) {
	if rec := b.ids[id]; rec != nil && rec.until > ns(now) {
		return tm(rec.until), true
	}
	return time.Time{}, false
}
