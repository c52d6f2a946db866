package broker

// stateMask is a set of job states, bit st for state st.
type stateMask uint8

const allStates stateMask = 1<<Queued | 1<<Dispatched | 1<<Backoff | 1<<Done | 1<<Failed

func (m stateMask) has(st JobState) bool { return m&(1<<st) != 0 }

// counts is the number of jobs per state in a block.
type counts [nStates]int32

func (c *counts) sum(m stateMask) int {
	if m == allStates {
		return int(c[Queued] + c[Dispatched] + c[Backoff] + c[Done] + c[Failed])
	}
	s := int32(0)
	for st := Queued; st < nStates; st++ {
		if m.has(st) {
			s += c[st]
		}
	}
	return int(s)
}

// countIdx counts jobs per state over positions 0, 1, 2, ... in blocks of
// 64, 4096 and 262144 positions, so that the k-th position holding a state
// of a mask is found by scanning at most 64 entries per level (plus the top
// level) instead of every position. An update touches one counter per level.
//
// While every position is below 64 (most hosts: a few jobs each) the three
// levels would each hold one block with the same counts: the index keeps
// those counts inline (small) and allocates the levels only when a
// position of 64 or more comes, so that a host's record carries its counts
// in its own cache line rather than in three arrays of its own.
type countIdx struct {
	small [1]counts    // the counts while lv is nil (one block)
	lv    *[3][]counts // the levels, once a position >= 64 was added
}

const lvBits = 6

func (c *countIdx) add(pos int, st JobState, d int32) {
	if c.lv == nil && pos < 1<<lvBits {
		c.small[0][st] += d
		return
	}
	c.addLevels(pos, st, d)
}

// addLevels is add once the levels exist or must: kept apart (not
// inlined) so that add's small case is inlined where it is called.
//
//go:noinline
func (c *countIdx) addLevels(pos int, st JobState, d int32) {
	if c.lv == nil {
		c.lv = &[3][]counts{{c.small[0]}, {c.small[0]}, {c.small[0]}}
	}
	for l := range c.lv {
		i := pos >> (lvBits * (l + 1))
		for i >= len(c.lv[l]) {
			c.lv[l] = append(c.lv[l], counts{})
		}
		c.lv[l][i][st] += d
	}
}

// level is the index's level l (0: blocks of 64 positions).
func (c *countIdx) level(l int) []counts {
	if c.lv == nil {
		return c.small[:]
	}
	return c.lv[l]
}

// total is the number of positions whose state is in m.
func (c *countIdx) total(m stateMask) int {
	n := 0
	for _, b := range c.level(2) {
		n += b.sum(m)
	}
	return n
}

// find narrows the k-th (from 0) position in m down to its block of 64: it
// returns the block's first position and the rank within the block, or -1
// when there are no more than k such positions.
func (c *countIdx) find(m stateMask, k int) (int, int) {
	lo, hi := 0, len(c.level(2))
	for l := 2; l >= 0; l-- {
		blocks := c.level(l)
		hi = min(hi, len(blocks))
		i := lo
		for ; i < hi; i++ {
			s := blocks[i].sum(m)
			if k < s {
				break
			}
			k -= s
		}
		if i == hi {
			return -1, 0
		}
		lo, hi = i<<lvBits, (i+1)<<lvBits
	}
	return lo, k
}

// ageIndex keeps every job's state by ID, with per-state block counts: the
// order of jobs by age (submission) within any set of states.
type ageIndex struct {
	states []JobState // by ID-1
	idx    countIdx
}

func (a *ageIndex) add(j JobID, st JobState) {
	a.states = append(a.states, st)
	a.idx.add(int(j-1), st, 1)
}

func (a *ageIndex) move(j JobID, old, st JobState) {
	a.states[j-1] = st
	a.idx.add(int(j-1), old, -1)
	a.idx.add(int(j-1), st, 1)
}

// posSet is a sequence of job positions with their states: every job by
// ID, or one host's jobs.
type posSet interface {
	len() int
	state(pos int) JobState
	id(pos int) JobID
}

func (a *ageIndex) len() int               { return len(a.states) }
func (a *ageIndex) state(pos int) JobState { return a.states[pos] }
func (a *ageIndex) id(pos int) JobID       { return JobID(pos + 1) }

// hostSet is one host's jobs as a posSet.
type hostSet struct {
	h   *host
	age *ageIndex
}

func (s hostSet) len() int { return s.h.ids.len() }
func (s hostSet) state(pos int) JobState {
	id := s.h.ids.at(pos)
	if id == 0 {
		return 0 // a position left by a job paged out (page.go)
	}
	return s.age.states[id-1]
}
func (s hostSet) id(pos int) JobID { return s.h.ids.at(pos) }

// scan yields up to lim jobs of ps whose state is in m, from the k-th (from
// 0, in position order) on, forward (dir 1) or backward (dir -1). It
// narrows down with the counts once, then walks positions, narrowing again
// only when it leaves a block of 64 positions.
func (c *countIdx) scan(ps posSet, m stateMask, k, dir, lim int, yield func(JobID)) {
	n := ps.len()
	for lim > 0 && k >= 0 {
		start, r := c.find(m, k)
		if start < 0 {
			return
		}
		p := start
		for ; p < n; p++ {
			if m.has(ps.state(p)) {
				if r == 0 {
					break
				}
				r--
			}
		}
		if p >= n {
			return // counts out of step: cannot happen
		}
		end := min(start+1<<lvBits, n)
		for p >= 0 {
			yield(ps.id(p))
			lim--
			k += dir
			if lim == 0 || k < 0 {
				return
			}
			q := p + dir
			for q >= start && q < end && !m.has(ps.state(q)) {
				q += dir
			}
			if q < start || q >= end {
				break // left the block: narrow down again
			}
			p = q
		}
	}
}
