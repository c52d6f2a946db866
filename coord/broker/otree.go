package broker

import (
	"cmp"
	"slices"
	"strings"
)

// sortKey names a job ordering of the jobs view.
type sortKey uint8

const (
	sortAge sortKey = iota // submission order (job ID)
	sortURL
	sortAttempts
	sortFailures
	sortRetryAt
	sortThrottles
	sortWorker // the worker running it (by id), jobs no worker runs last
	sortState  // state, then age
	nSorts
)

var sortNames = [nSorts]string{"age", "url", "attempts", "failures", "retry_at", "throttles", "worker", "state"}

// orderTree is an order-statistic B+ tree of jobs under one sort key (ties
// broken by ID), where every node counts its jobs per state: the k-th job
// among any set of states is found in O(depth × fanout), and a state change
// updates the counts along one root-to-leaf path without moving the job.
type orderTree struct {
	b    *Broker // whose jobs' URLs and workers it reads
	key  sortKey
	max  int    // entries per node before it splits
	used uint64 // Broker.changes when a query last used it
	root *otNode
	// leaves holds each job's leaf, by job ID - 1, so that state changes
	// and removals walk up from the leaf instead of searching down by key.
	// It lives in the tree, not in the job: a job record pays nothing for
	// the sort indexes no one built (issue 21).
	leaves []*otNode
}

const otMax = 64 // default entries per node before it splits

type otNode struct {
	cnt    counts
	leaf   bool
	parent *otNode
	items  []*job    // leaf: the jobs, in order
	kids   []*otNode // internal: the children, in order
	mins   []*job    // internal: the first job under each child
}

// slot is where the tree keeps job j's leaf.
func (t *orderTree) slot(j *job) **otNode {
	i := int(j.id - 1)
	if i >= len(t.leaves) {
		t.leaves = slices.Grow(t.leaves, i+1-len(t.leaves))
		t.leaves = t.leaves[:cap(t.leaves)]
	}
	return &t.leaves[i]
}

func (t *orderTree) cmp(a, b *job) int {
	var c int
	switch t.key {
	case sortURL:
		c = t.b.urls.Compare(a.urlRef(), b.urlRef())
	case sortAttempts:
		c = cmp.Compare(t.b.jobAttempts(a), t.b.jobAttempts(b))
	case sortFailures:
		c = cmp.Compare(t.b.jobFailures(a), t.b.jobFailures(b))
	case sortRetryAt:
		c = cmp.Compare(t.b.retryAt(a), t.b.retryAt(b))
	case sortThrottles:
		c = cmp.Compare(t.b.jobThrottles(a), t.b.jobThrottles(b))
	case sortWorker:
		wa, wb := t.b.workerOf(a), t.b.workerOf(b)
		switch {
		case wa == nil && wb == nil:
		case wa == nil:
			c = 1
		case wb == nil:
			c = -1
		default:
			c = strings.Compare(wa.id, wb.id)
		}
	}
	if c == 0 {
		c = cmp.Compare(a.id, b.id)
	}
	return c
}

func (n *otNode) first() *job {
	if n.leaf {
		return n.items[0]
	}
	return n.mins[0]
}

func (n *otNode) size() int {
	if n.leaf {
		return len(n.items)
	}
	return len(n.kids)
}

// child returns the index of the child whose range holds j.
func (t *orderTree) child(n *otNode, j *job) int {
	i, _ := slices.BinarySearchFunc(n.mins, j, t.cmp)
	if i < len(n.mins) && n.mins[i] == j {
		return i
	}
	return max(i-1, 0)
}

func (t *orderTree) insert(j *job) {
	if t.root == nil {
		t.root = &otNode{leaf: true}
	}
	if sib := t.ins(t.root, j); sib != nil {
		old := t.root
		t.root = &otNode{kids: []*otNode{old, sib}, mins: []*job{old.first(), sib.first()}}
		old.parent, sib.parent = t.root, t.root
		t.root.cnt = old.cnt
		for st := range sib.cnt {
			t.root.cnt[st] += sib.cnt[st]
		}
	}
}

// ins inserts j under n and returns n's new right sibling if n split.
func (t *orderTree) ins(n *otNode, j *job) *otNode {
	n.cnt[j.state]++
	if n.leaf {
		i, _ := slices.BinarySearchFunc(n.items, j, t.cmp)
		n.items = slices.Insert(n.items, i, j)
		*t.slot(j) = n
		if len(n.items) <= t.max {
			return nil
		}
		half := len(n.items) / 2
		sib := &otNode{leaf: true, items: append(make([]*job, 0, t.max+1), n.items[half:]...)}
		clear(n.items[half:])
		n.items = n.items[:half]
		for _, k := range sib.items {
			sib.cnt[k.state]++
			n.cnt[k.state]--
			*t.slot(k) = sib
		}
		return sib
	}
	i := t.child(n, j)
	sib := t.ins(n.kids[i], j)
	n.mins[i] = n.kids[i].first()
	if sib == nil {
		return nil
	}
	sib.parent = n
	n.kids = slices.Insert(n.kids, i+1, sib)
	n.mins = slices.Insert(n.mins, i+1, sib.first())
	if len(n.kids) <= t.max {
		return nil
	}
	half := len(n.kids) / 2
	s := &otNode{kids: append(make([]*otNode, 0, t.max+1), n.kids[half:]...), mins: append(make([]*job, 0, t.max+1), n.mins[half:]...)}
	clear(n.kids[half:])
	clear(n.mins[half:])
	n.kids, n.mins = n.kids[:half], n.mins[:half]
	for _, k := range s.kids {
		k.parent = s
		for st := range k.cnt {
			s.cnt[st] += k.cnt[st]
			n.cnt[st] -= k.cnt[st]
		}
	}
	return s
}

// remove takes j out; j's key and state must be those it was counted under.
func (t *orderTree) remove(j *job) {
	n := *t.slot(j)
	if n == nil {
		return
	}
	*t.slot(j) = nil
	n.items = slices.Delete(n.items, slices.Index(n.items, j), slices.Index(n.items, j)+1)
	for c := n; c != nil; c = c.parent {
		c.cnt[j.state]--
	}
	// Drop emptied nodes and fix the separators above, bottom-up.
	for c := n; c.parent != nil; c = c.parent {
		p := c.parent
		i := slices.Index(p.kids, c)
		if c.size() == 0 {
			p.kids = slices.Delete(p.kids, i, i+1)
			p.mins = slices.Delete(p.mins, i, i+1)
			continue
		}
		if p.mins[i] == c.first() {
			break // nothing changes further up
		}
		p.mins[i] = c.first()
	}
	for !t.root.leaf && len(t.root.kids) == 1 {
		t.root = t.root.kids[0]
		t.root.parent = nil
	}
	if t.root.size() == 0 {
		t.root = nil
	}
}

// restate moves j's count from state old to st along its path.
func (t *orderTree) restate(j *job, old, st JobState) {
	for n := *t.slot(j); n != nil; n = n.parent {
		n.cnt[old]--
		n.cnt[st]++
	}
}

// total is the number of jobs in m.
func (t *orderTree) total(m stateMask) int {
	if t.root == nil {
		return 0
	}
	return t.root.cnt.sum(m)
}

// otPos is one step of an iterator's path.
type otPos struct {
	n *otNode
	i int
}

// otIter walks the jobs of a state mask in tree order.
type otIter struct {
	m    stateMask
	path []otPos
}

// seek positions an iterator at the k-th (from 0) job in m; false when
// there are no more than k.
func (t *orderTree) seek(m stateMask, k int, path []otPos) (otIter, bool) {
	it := otIter{m: m, path: path[:0]}
	n := t.root
	if n == nil || k >= n.cnt.sum(m) {
		return it, false
	}
	for !n.leaf {
		i := 0
		for ; i < len(n.kids); i++ {
			s := n.kids[i].cnt.sum(m)
			if k < s {
				break
			}
			k -= s
		}
		it.path = append(it.path, otPos{n, i})
		n = n.kids[i]
	}
	for i, j := range n.items {
		if m.has(j.state) {
			if k == 0 {
				it.path = append(it.path, otPos{n, i})
				return it, true
			}
			k--
		}
	}
	return it, false // counts out of step: cannot happen
}

func (it *otIter) job() *job {
	p := it.path[len(it.path)-1]
	return p.n.items[p.i]
}

// step moves to the next (dir 1) or previous (dir -1) job in the mask.
func (it *otIter) step(dir int) bool {
	d := len(it.path) - 1
	leaf := &it.path[d]
	for i := leaf.i + dir; i >= 0 && i < len(leaf.n.items); i += dir {
		if it.m.has(leaf.n.items[i].state) {
			leaf.i = i
			return true
		}
	}
	// Climb to the nearest ancestor with a later sibling holding a match.
	for d--; d >= 0; d-- {
		p := &it.path[d]
		for i := p.i + dir; i >= 0 && i < len(p.n.kids); i += dir {
			if p.n.kids[i].cnt.sum(it.m) > 0 {
				p.i = i
				it.path = it.path[:d+1]
				return it.descend(p.n.kids[i], dir)
			}
		}
	}
	return false
}

// descend goes down to the first (dir 1) or last (dir -1) match under n.
func (it *otIter) descend(n *otNode, dir int) bool {
	for !n.leaf {
		found := false
		for k := 0; k < len(n.kids); k++ {
			i := k
			if dir < 0 {
				i = len(n.kids) - 1 - k
			}
			if n.kids[i].cnt.sum(it.m) > 0 {
				it.path = append(it.path, otPos{n, i})
				n = n.kids[i]
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	for k := 0; k < len(n.items); k++ {
		i := k
		if dir < 0 {
			i = len(n.items) - 1 - k
		}
		if it.m.has(n.items[i].state) {
			it.path = append(it.path, otPos{n, i})
			return true
		}
	}
	return false
}

// tree returns the index for a sort key, building it on first use. Once
// built it is kept up to date by every change, so only the first query by
// a key pays O(n log n).
func (b *Broker) tree(k sortKey) *orderTree {
	t := b.trees[k]
	if t == nil {
		t = &orderTree{b: b, key: k, max: b.fanout, leaves: make([]*otNode, b.jobs.n)}
		all := make([]*job, 0, b.jobs.n-b.forgot-b.paged-b.handed)
		for i := 1; i <= b.jobs.n; i++ {
			if j := b.jobs.get(JobID(i)); j != nil {
				all = append(all, j)
			}
		}
		slices.SortFunc(all, t.cmp)
		t.build(all)
		b.trees[k] = t
	}
	t.used = b.changes
	return t
}

// dropIdleTrees drops the sort indexes no query used during the last
// 2n + 65536 changes (n live jobs): keeping one up to date for that long
// has cost about as much as rebuilding it, so an operator who sorted once
// does not slow dispatch for ever, and one who keeps sorting pays at most
// about twice the maintenance (the ski-rental bound).
func (b *Broker) dropIdleTrees() {
	limit := uint64(2*(b.jobs.n-b.forgot-b.paged-b.handed) + 1<<16)
	for k, t := range b.trees {
		if t == nil || b.changes-t.used <= limit {
			continue
		}
		b.trees[k] = nil // its nodes and leaves go with it
	}
}

// build bulk-loads sorted jobs into an empty tree, leaves three-quarters full.
func (t *orderTree) build(all []*job) {
	if len(all) == 0 {
		return
	}
	fill := max(t.max*3/4, 2)
	var level []*otNode
	for i := 0; i < len(all); i += fill {
		n := &otNode{leaf: true, items: slices.Clone(all[i:min(i+fill, len(all))])}
		for _, j := range n.items {
			n.cnt[j.state]++
			*t.slot(j) = n
		}
		level = append(level, n)
	}
	for len(level) > 1 {
		var up []*otNode
		for i := 0; i < len(level); i += fill {
			n := &otNode{kids: slices.Clone(level[i:min(i+fill, len(level))])}
			for _, k := range n.kids {
				k.parent = n
				n.mins = append(n.mins, k.first())
				for st := range k.cnt {
					n.cnt[st] += k.cnt[st]
				}
			}
			up = append(up, n)
		}
		level = up
	}
	t.root = level[0]
}
