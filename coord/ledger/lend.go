package ledger

import (
	"drover/coord/id"
	"drover/coord/offheap"
)

// One copy of a queued key's URL (issue 21). A queued key usually has a
// job, and the job keeps the key's URL for its whole life: the ledger's
// copy would be a second one. So the coordinator lends the ledger's URL
// to the job: Lend gives the record's URL slot back to the slab, and the
// record reads its URL through the lender (SetLender: the broker's job of
// the key) when asked for its key (Lookup, the key views). A queued
// record only leaves the ledger whole (dropRec), so a lent URL is never
// needed to move the record elsewhere; Reclaim takes the URL back, into
// the slab, before its holder forgets it.

// SetLender sets the function that returns the URL of a key whose URL
// was lent (Lend); without one, Lend lends nothing.
func (l *Ledger) SetLender(f func(id.Fingerprint) (string, bool)) { l.keys.lender = f }

// Lend lends the URL of queued key fp to its holder: the record keeps
// its length only. It reports whether it did (false for a key that is not
// queued, a URL lent already, empty or longer than the slab's slots).
func (l *Ledger) Lend(fp id.Fingerprint) bool {
	ri := l.idx.get(&fp)
	if ri == 0 || l.keys.lender == nil {
		return false
	}
	r := l.recs.at(ri)
	if r.state != Queued || r.ulen == 0 || r.ulen == urlLong || r.ulen == urlLent {
		return false
	}
	u := offheap.Ref{Slot: r.url, Len: r.ulen}
	n := l.keys.urls.Len(u)
	l.keys.urls.Free(u)
	r.url, r.ulen = uint32(n), urlLent
	return true
}

// Reclaim takes back the lent URL of key fp, url, into the record's own
// slot; nothing when fp's URL is not lent, or url is not its URL.
func (l *Ledger) Reclaim(fp id.Fingerprint, url string) {
	ri := l.idx.get(&fp)
	if ri == 0 {
		return
	}
	r := l.recs.at(ri)
	if r.ulen != urlLent || int(r.url) != len(url) {
		return
	}
	u := l.keys.urls.Put(url)
	r.url, r.ulen = u.Slot, u.Len
}

// Lent is the number of queued keys whose URL is lent (for tests).
func (l *Ledger) Lent() int {
	n := 0
	for ri := l.queue.head; ri != 0; ri = l.recs.at(ri).lq.next {
		if l.recs.at(ri).ulen == urlLent {
			n++
		}
	}
	return n
}
