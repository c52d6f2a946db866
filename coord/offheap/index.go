package offheap

import (
	"fmt"
	"iter"
	"math/bits"
	"unsafe"
)

// Index is an open-addressing hash table of non-zero slots (0 is an empty
// slot) with linear probing, kept in its owner's Mem: the ledger's and the
// broker's fingerprint indexes (issue 21). A slot holds no key, only what
// names the key's record (and, for the ledger, a tag): the owner gives
// the hash of the key a slot names (Init) and, for a lookup, a function
// that says whether a slot is the key's.
//
// Growth (issue 21). The table grows by half (not by doubling: about a
// sixth less memory per key on average) when it would pass 3/4 full, and
// incrementally: the new table takes every insert, and each insert or
// delete moves a bounded number of the old table's slots into it
// (moveStep, whole clusters), so that no operation rehashes the whole
// table (at 10M keys that stalled the reactor for seconds). Lookups and
// deletes look in both tables while the move lasts. The move never splits
// a cluster (a run of full slots between two empty ones): it starts just
// after an empty slot and takes a cluster whole, so every key left in the
// old table is still found by probing from its home there (a probe never
// crosses an empty slot). Deletion shifts the entries after the hole back
// (no tombstones), in whichever table the entry is.
//
// Positions come from the hash's high bits (a multiply-shift: the table
// needs no power-of-two size). Hashes must be uniform (the fingerprints
// are SHA-256 prefixes).
type Index[S ~uint32 | ~uint64] struct {
	mem  *Mem
	hash func(S) uint64

	cur table[S] // takes every insert
	old table[S] // while growing: what is left to move, else empty
	n   int      // entries in both

	// The move: the next old position to look at and how many old
	// positions are left to look at.
	next, left int

	moved int // slots moved by the last operation (for tests)
}

type table[S ~uint32 | ~uint64] struct {
	s   []S
	raw []byte
}

// home is the position of hash h.
func (t *table[S]) home(h uint64) int {
	hi, _ := bits.Mul64(h, uint64(len(t.s)))
	return int(hi)
}

const (
	// IndexMinSlots is the smallest table.
	IndexMinSlots = 64
	// moveStep is how many old positions an insert or a delete moves at
	// least while the table grows (a cluster is moved whole, so it may
	// be more). Growth starts at 3/4 of the old table and the new one is
	// half as big again, so the move must end within 3/8 of the old
	// table's size in inserts: 16 positions an insert end it in 1/16.
	moveStep = 16
)

// Init empties the index: its tables come from mem, and hash gives the
// hash of the key a slot names.
func (x *Index[S]) Init(mem *Mem, hash func(S) uint64) {
	x.mem, x.hash = mem, hash
	x.cur = x.newTable(IndexMinSlots)
	x.old = table[S]{}
	x.n, x.next, x.left = 0, 0, 0
}

func (x *Index[S]) newTable(n int) table[S] {
	var zero S
	raw := x.mem.Table(n * int(unsafe.Sizeof(zero)))
	return table[S]{s: View[S](raw, n), raw: raw}
}

// Len is the number of entries.
func (x *Index[S]) Len() int { return x.n }

// Slots is the number of slots of both tables (for memory figures).
func (x *Index[S]) Slots() int { return len(x.cur.s) + len(x.old.s) }

// Growing reports whether a move from an old table is under way.
func (x *Index[S]) Growing() bool { return x.old.s != nil }

// Moved is the number of slots the last insert, delete or Step moved.
func (x *Index[S]) Moved() int { return x.moved }

// Get returns the slot of the key whose hash is h, for which match is
// true, or 0.
func (x *Index[S]) Get(h uint64, match func(S) bool) S {
	if p := x.find(&x.cur, h, match); p >= 0 {
		return x.cur.s[p]
	}
	if x.old.s != nil {
		if p := x.find(&x.old, h, match); p >= 0 {
			return x.old.s[p]
		}
	}
	return 0
}

// Replace sets the slot of the key whose hash is h, for which match is
// true, to s, and reports whether there was one.
func (x *Index[S]) Replace(h uint64, match func(S) bool, s S) bool {
	if p := x.find(&x.cur, h, match); p >= 0 {
		x.cur.s[p] = s
		return true
	}
	if x.old.s != nil {
		if p := x.find(&x.old, h, match); p >= 0 {
			x.old.s[p] = s
			return true
		}
	}
	return false
}

func (x *Index[S]) find(t *table[S], h uint64, match func(S) bool) int {
	m := len(t.s)
	for i := t.home(h); ; {
		s := t.s[i]
		if s == 0 {
			return -1
		}
		if match(s) {
			return i
		}
		if i++; i == m {
			i = 0
		}
	}
}

// All yields every slot, in no order. The index must not change meanwhile.
func (x *Index[S]) All() iter.Seq[S] {
	return func(yield func(S) bool) {
		for _, t := range []*table[S]{&x.cur, &x.old} {
			for _, s := range t.s {
				if s != 0 && !yield(s) {
					return
				}
			}
		}
	}
}

// Home is the slot at hash h's home position in the table that takes
// inserts: a read that warms the cache ahead of a lookup.
func (x *Index[S]) Home(h uint64) S { return x.cur.s[x.cur.home(h)] }

// Put adds slot s (non-zero) for a key whose hash is h and which has no
// slot yet.
func (x *Index[S]) Put(h uint64, s S) {
	x.moved = 0
	if x.old.s != nil {
		x.move(moveStep)
	}
	if 4*(x.n+1) > 3*len(x.cur.s) {
		if x.old.s != nil {
			x.move(len(x.old.s)) // cannot happen with moveStep: finish it
		}
		x.resize(len(x.cur.s) + len(x.cur.s)/2)
	}
	insert(&x.cur, h, s)
	x.n++
}

func insert[S ~uint32 | ~uint64](t *table[S], h uint64, s S) {
	m := len(t.s)
	i := t.home(h)
	for t.s[i] != 0 {
		if i++; i == m {
			i = 0
		}
	}
	t.s[i] = s
}

// Delete removes the slot of the key whose hash is h, for which match is
// true, and reports whether there was one. A table at most 1/8 full
// shrinks by half (incrementally too).
func (x *Index[S]) Delete(h uint64, match func(S) bool) bool {
	x.moved = 0
	t := &x.cur
	p := x.find(t, h, match)
	if p < 0 && x.old.s != nil {
		t = &x.old
		p = x.find(t, h, match)
	}
	if p < 0 {
		return false
	}
	x.remove(t, p)
	x.n--
	if x.old.s != nil {
		x.move(moveStep)
	} else if len(x.cur.s) > IndexMinSlots && 8*x.n < len(x.cur.s) {
		x.resize(max(IndexMinSlots, len(x.cur.s)/2))
	}
	return true
}

// remove empties position i of t, shifting back each following entry of
// its cluster that may move into the hole (its home is not cyclically in
// (hole, its position]).
func (x *Index[S]) remove(t *table[S], i int) {
	m := len(t.s)
	j := i
	for {
		if j++; j == m {
			j = 0
		}
		s := t.s[j]
		if s == 0 {
			break
		}
		home := t.home(x.hash(s))
		if (j-home+m)%m >= (j-i+m)%m {
			t.s[i] = s
			i = j
		}
	}
	t.s[i] = 0
}

// resize starts a move of every entry into a new table of n slots.
func (x *Index[S]) resize(n int) {
	x.old, x.cur = x.cur, x.newTable(n)
	// Start just after an empty slot (there is one: the table is at most
	// 7/8 full), so that no cluster is split.
	m := len(x.old.s)
	e := 0
	for x.old.s[e] != 0 {
		e++
	}
	x.next, x.left = (e+1)%m, m
	if x.n == 0 {
		x.move(m)
	}
}

// Step moves up to limit old positions (whole clusters) while the table
// grows: for an owner's idle time (a tick), so that the old table is
// given back soon even when no insert comes.
func (x *Index[S]) Step(limit int) {
	x.moved = 0
	if x.old.s != nil {
		x.move(limit)
	}
}

// move moves the entries of old positions, at least limit positions
// unless the move ends, and stops only at an empty position, so that a
// cluster is moved whole; the old table is released once every position
// was looked at.
func (x *Index[S]) move(limit int) {
	o := &x.old
	m := len(o.s)
	for x.left > 0 {
		s := o.s[x.next]
		if s == 0 && limit <= 0 {
			break
		}
		if s != 0 {
			insert(&x.cur, x.hash(s), s)
			o.s[x.next] = 0
			x.moved++
		}
		if x.next++; x.next == m {
			x.next = 0
		}
		x.left--
		limit--
	}
	if x.left == 0 {
		x.mem.Release(o.raw)
		x.old = table[S]{}
	}
}

// Check verifies the index for tests: every entry is reachable from its
// home without crossing an empty slot in its table, ok accepts it, the
// count is right and the tables are at most 3/4 full (7/8 for the one
// taking inserts while the old one empties).
func (x *Index[S]) Check(ok func(S) error) error {
	n := 0
	for ti, t := range []*table[S]{&x.cur, &x.old} {
		m := len(t.s)
		for i, s := range t.s {
			if s == 0 {
				continue
			}
			n++
			if err := ok(s); err != nil {
				return fmt.Errorf("index table %d slot %d: %w", ti, i, err)
			}
			for j := t.home(x.hash(s)); j != i; j = (j + 1) % m {
				if t.s[j] == 0 {
					return fmt.Errorf("index table %d slot %d: empty slot %d between it and its home", ti, i, j)
				}
			}
		}
	}
	if n != x.n {
		return fmt.Errorf("index holds %d entries, counts %d", n, x.n)
	}
	if x.old.s == nil && 4*x.n > 3*len(x.cur.s) || 8*x.n > 7*len(x.cur.s) {
		return fmt.Errorf("index %d/%d full, over 3/4 (growing: %v)", x.n, len(x.cur.s), x.old.s != nil)
	}
	return nil
}
