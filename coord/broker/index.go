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
type countIdx struct {
	lv [3][]counts
}

const lvBits = 6

func (c *countIdx) add(pos int, st JobState, d int32) {
	for l := range c.lv {
		i := pos >> (lvBits * (l + 1))
		for i >= len(c.lv[l]) {
			c.lv[l] = append(c.lv[l], counts{})
		}
		c.lv[l][i][st] += d
	}
}

// total is the number of positions whose state is in m.
func (c *countIdx) total(m stateMask) int {
	n := 0
	for i := range c.lv[2] {
		n += c.lv[2][i].sum(m)
	}
	return n
}

// find narrows the k-th (from 0) position in m down to its block of 64: it
// returns the block's first position and the rank within the block, or -1
// when there are no more than k such positions.
func (c *countIdx) find(m stateMask, k int) (int, int) {
	lo, hi := 0, len(c.lv[2])
	for l := 2; l >= 0; l-- {
		blocks := c.lv[l]
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

// nth returns the ID of the k-th (from 0) job by age whose state is in m,
// or 0 when there is none.
func (a *ageIndex) nth(m stateMask, k int) JobID {
	pos, r := a.idx.find(m, k)
	if pos < 0 {
		return 0
	}
	for p := pos; p < len(a.states); p++ {
		if m.has(a.states[p]) {
			if r == 0 {
				return JobID(p + 1)
			}
			r--
		}
	}
	return 0
}

// hostNth is nth over one host's jobs.
func (b *Broker) hostNth(h *host, m stateMask, k int) JobID {
	pos, r := h.idx.find(m, k)
	if pos < 0 {
		return 0
	}
	for p := pos; p < len(h.ids); p++ {
		if m.has(b.age.states[h.ids[p]-1]) {
			if r == 0 {
				return h.ids[p]
			}
			r--
		}
	}
	return 0
}
