// Package names interns the (crawler, processor) pairs of work keys with a
// reference count, so that a record holds a uint32 instead of two string
// headers, and a pair no record uses any more is forgotten (a producer
// inventing names costs memory only while its keys live). The ledger and
// the broker keep their keys' names here (issue 21).
package names

import (
	"fmt"
	"strings"
)

// Pair is a key's crawler and processor.
type Pair struct{ Crawler, Processor string }

type entry struct {
	Pair
	refs int // records using the pair; 0 means free
}

// Pairs is a table of interned pairs, ids from 1 (0 names no pair). The
// zero value is ready to use. Not safe for concurrent use.
type Pairs struct {
	pairs []entry // index 0 unused
	idx   map[Pair]uint32
	free  []uint32
	last  Pair // one-entry cache in front of idx
	lastI uint32
}

// Intern returns the id of the pair (crawler, processor), taking a
// reference on it. The strings are copied when the pair is new, so the
// table never keeps a caller's (possibly larger) allocation alive.
func (t *Pairs) Intern(crawler, processor string) uint32 {
	if t.lastI != 0 && t.last.Crawler == crawler && t.last.Processor == processor {
		t.pairs[t.lastI].refs++
		return t.lastI
	}
	p := Pair{crawler, processor}
	i, ok := t.idx[p]
	if !ok {
		p = Pair{strings.Clone(crawler), strings.Clone(processor)}
		if t.idx == nil {
			t.idx = make(map[Pair]uint32)
			t.pairs = make([]entry, 1, 4)
		}
		if f := len(t.free); f > 0 {
			i = t.free[f-1]
			t.free = t.free[:f-1]
		} else {
			t.pairs = append(t.pairs, entry{})
			i = uint32(len(t.pairs) - 1)
		}
		t.pairs[i].Pair = p
		t.idx[p] = i
	}
	t.pairs[i].refs++
	t.last, t.lastI = t.pairs[i].Pair, i
	return i
}

// Get returns pair i (the zero Pair for 0).
func (t *Pairs) Get(i uint32) Pair {
	if i == 0 {
		return Pair{}
	}
	return t.pairs[i].Pair
}

// Release drops a reference on pair i (0: nothing), forgetting the pair
// with its last reference.
func (t *Pairs) Release(i uint32) {
	if i == 0 {
		return
	}
	e := &t.pairs[i]
	if e.refs--; e.refs > 0 {
		return
	}
	delete(t.idx, e.Pair)
	if t.lastI == i {
		t.last, t.lastI = Pair{}, 0
	}
	*e = entry{}
	t.free = append(t.free, i)
}

// Len is the number of pairs interned.
func (t *Pairs) Len() int { return len(t.idx) }

// Check verifies the table's bookkeeping and that the references held
// are refs (pair id to the count of records naming it), for invariant
// tests.
func (t *Pairs) Check(refs map[uint32]int) error {
	inUse := 0
	for i := 1; i < len(t.pairs); i++ {
		e := &t.pairs[i]
		if e.refs != refs[uint32(i)] {
			return fmt.Errorf("name pair %d (%q, %q): %d references, %d records name it", i, e.Crawler, e.Processor, e.refs, refs[uint32(i)])
		}
		if e.refs > 0 {
			inUse++
			if got := t.idx[e.Pair]; got != uint32(i) {
				return fmt.Errorf("name pair %d (%q, %q) indexed as %d", i, e.Crawler, e.Processor, got)
			}
		}
	}
	for i, n := range refs {
		if n != 0 && (i == 0 || int(i) >= len(t.pairs)) {
			return fmt.Errorf("%d records name pair %d, which does not exist", n, i)
		}
	}
	if inUse != len(t.idx) || inUse+len(t.free) != max(len(t.pairs)-1, 0) {
		return fmt.Errorf("name pairs: %d in use, %d indexed, %d free, %d slots", inUse, len(t.idx), len(t.free), max(len(t.pairs)-1, 0))
	}
	return nil
}
