package ledger

import (
	"time"

	"drover/coord/id"
)

// Requeue makes key k (fingerprint fp) queued whatever its state, because
// its job went back to a queue outside the normal flow (an operator
// requeued a failed or finished job): a done or failed record is dropped, a
// requested key moves to queued (its waiters are answered No "queued"),
// and an absent key is created queued. A queued key is left as it is.
func (l *Ledger) Requeue(now time.Time, k id.Key, fp id.Fingerprint) {
	t := now.UnixNano()
	l.expireLeases(t)
	if ri := l.idx.get(&fp); ri != 0 {
		if ri > 0 && l.recs.at(ri).state == Requested {
			l.toQueued(t, ri)
		}
		return
	}
	l.done.remove(fp)
	ri, _ := l.newRec(fp, &k, Queued, t)
	l.queue.push(ri, l.atLQ)
	l.event(EventQueued, 0, fp, ReasonNone)
	l.write(PutQueued, fp, &k, t, DoneOK)
}
