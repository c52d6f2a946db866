package ledger

import (
	"slices"
	"time"

	"drover/coord/id"
)

// The batch forms take the links of one page together: one call, one time,
// one lease check, the same answers as the single calls made in order.

// Item is one key of a batch: the key and its fingerprint (k.Fingerprint()).
type Item struct {
	Key id.Key         // the work key, URL normalised
	FP  id.Fingerprint // Key.Fingerprint(), computed once by the caller
}

// Result is the immediate answer for one item of a batch.
type Result struct {
	Verdict Verdict // OK, No, Wait or Error, as the single call answers
	Reason  Reason  // set on every No and Error
}

// RequestBatch requests every item for session s, as Request would in
// order, and appends one Result per item to dst. Deferred answers for items
// that got Wait quote reqID and the item's fingerprint.
func (l *Ledger) RequestBatch(now time.Time, s id.Session, reqID uint64, items []Item, dst []Result) []Result {
	t := now.UnixNano()
	l.expireLeases(t)
	dst = slices.Grow(dst, len(items))
	l.events = slices.Grow(l.events, len(items))
	for lo := 0; lo < len(items); lo += warmWindow {
		w := items[lo:min(lo+warmWindow, len(items))]
		l.warmItems(w)
		for i := range w {
			v, r := l.request(t, s, reqID, &w[i].Key, w[i].FP)
			dst = append(dst, Result{v, r})
		}
	}
	return dst
}

// warmItems warms the index for the fingerprints of items (index.go).
func (l *Ledger) warmItems(items []Item) {
	var sum uint64
	for i := range items {
		sum += l.idx.warmSlot(&items[i].FP)
	}
	for i := range items {
		sum += l.idx.warmRec(&items[i].FP)
	}
	l.idx.sink += sum
}

// warmFPs is warmItems for bare fingerprints.
func (l *Ledger) warmFPs(fps []id.Fingerprint) {
	var sum uint64
	for i := range fps {
		sum += l.idx.warmSlot(&fps[i])
	}
	for i := range fps {
		sum += l.idx.warmRec(&fps[i])
	}
	l.idx.sink += sum
}

// QueueBatch queues every fingerprint for session s, as Queue would in
// order, and appends one Result per fingerprint to dst.
func (l *Ledger) QueueBatch(now time.Time, s id.Session, fps []id.Fingerprint, dst []Result) []Result {
	t := now.UnixNano()
	l.expireLeases(t)
	dst = slices.Grow(dst, len(fps))
	for lo := 0; lo < len(fps); lo += warmWindow {
		w := fps[lo:min(lo+warmWindow, len(fps))]
		l.warmFPs(w)
		for _, fp := range w {
			v, r := l.queueKey(t, s, fp)
			dst = append(dst, Result{v, r})
		}
	}
	return dst
}

// DoneBatch marks every item done with outcome o, as Done would in order.
func (l *Ledger) DoneBatch(now time.Time, items []Item, o Outcome) {
	t := now.UnixNano()
	l.expireLeases(t)
	for lo := 0; lo < len(items); lo += warmWindow {
		w := items[lo:min(lo+warmWindow, len(items))]
		l.warmItems(w)
		for i := range w {
			l.markDone(t, &w[i].Key, w[i].FP, o)
		}
	}
	l.sweepDone(t, 2*len(items))
}
