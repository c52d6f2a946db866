package coord

import (
	"slices"

	"drover/coord/id"
)

// Normals are the normal forms and fingerprints of one message's keys, in
// the message's order, as Unknown worked them out. A message whose keys
// are looked up in the store waits (parked, net/server) while later
// messages are read, each with its own Unknown: the transport takes the
// message's Normals (TakeNormals) when it parks it and hands them back
// (UseNormals) just before its operation, which then normalises and
// fingerprints each key once in all, not once more per message. Both are
// functions of the raw key alone: a memo never goes stale, and a key it
// does not hold is simply worked out again.
type Normals struct {
	ns   []normal
	next int // where the operation's next key is expected
}

// normal is one key of a memo: the raw key as the message named it, its
// normal form and fingerprint, or why it does not normalise.
type normal struct {
	raw, key id.Key
	fp       id.Fingerprint
	err      error
}

// lookAhead bounds how far find looks past the expected key: an operation
// asks for the keys in the message's order, skipping some (the links of a
// stale result), so a key is found at or a little after the last one.
const lookAhead = 64

// find returns the memo of raw key k.
func (n *Normals) find(k id.Key) (normal, bool) {
	end := min(len(n.ns), n.next+lookAhead)
	for i := n.next; i < end; i++ {
		if n.ns[i].raw == k {
			n.next = i + 1
			return n.ns[i], true
		}
	}
	return normal{}, false
}

// TakeNormals returns the memo of the last Unknown, for a message that will
// wait, and leaves the coordinator none (the next Unknown starts afresh).
func (c *Coordinator) TakeNormals() Normals {
	n := c.norms
	c.norms = Normals{}
	n.next = 0
	return n
}

// UseNormals makes n (from TakeNormals) the memo for the operation that
// follows, on the message whose keys they are. The memo it replaces is
// kept for a later Unknown to reuse.
func (c *Coordinator) UseNormals(n Normals) {
	c.spareNorms(c.norms.ns)
	n.next = 0
	c.norms = n
}

// maxSpareNorms bounds the memos kept for reuse: a few messages' worth.
const maxSpareNorms = 4

// spareNorms keeps ns, emptied, for a later Unknown.
func (c *Coordinator) spareNorms(ns []normal) {
	if cap(ns) == 0 || len(c.spare) == maxSpareNorms {
		return
	}
	clear(ns[:cap(ns)]) // the keys' strings go
	c.spare = append(c.spare, ns[:0])
}

// resetNorms starts the memo of a message of n keys, on a spare one if
// there is one.
func (c *Coordinator) resetNorms(n int) {
	clear(c.norms.ns) // the last message's strings go
	ns := c.norms.ns[:0]
	if cap(ns) == 0 && len(c.spare) > 0 {
		ns = c.spare[len(c.spare)-1]
		c.spare[len(c.spare)-1] = nil
		c.spare = c.spare[:len(c.spare)-1]
	}
	c.norms = Normals{ns: slices.Grow(ns, min(n, maxNorms))}
}
