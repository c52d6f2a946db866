package broker

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"drover/admin"
	"drover/filter"
)

// TestOrderTree drives an order tree with random inserts, removals, key and
// state changes, and checks counts, order, seeks and steps in both
// directions against a sorted slice, for small and default node sizes.
func TestOrderTree(t *testing.T) {
	for _, c := range []struct {
		fanout, ops int
		key         sortKey
	}{
		{4, 3000, sortAttempts},
		{5, 3000, sortURL},
		{otMax, 20000, sortAttempts},
		{otMax, 20000, sortRetryAt},
	} {
		t.Run(fmt.Sprintf("fanout=%d,%s", c.fanout, sortNames[c.key]), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(c.fanout), uint64(c.ops)))
			b, err := New(Config{})
			if err != nil {
				t.Fatal(err)
			}
			tr := &orderTree{b: b, key: c.key, max: c.fanout}
			var in []*job
			nextID := uint32(1)
			for op := range c.ops {
				switch x := r.IntN(10); {
				case x < 5 || len(in) == 0:
					j := &job{id: nextID, state: JobState(1 + r.IntN(5))}
					b.moreFor(j).attempts = int32(r.IntN(5))
					b.moreFor(j).retryAt = int64(r.IntN(50))
					u := b.urls.Put(fmt.Sprintf("https://h%d.example.com/%03d", r.IntN(3), r.IntN(500))) // kept split: the tree compares parts
					j.url, j.ulen = u.Slot, u.Len
					nextID++
					tr.insert(j)
					in = append(in, j)
				case x < 7:
					i := r.IntN(len(in))
					tr.remove(in[i])
					in = slices.Delete(in, i, i+1)
				case x < 9:
					j := in[r.IntN(len(in))]
					st := JobState(1 + r.IntN(5))
					tr.restate(j, j.state, st)
					j.state = st
				default:
					j := in[r.IntN(len(in))]
					tr.remove(j)
					b.moreFor(j).attempts = int32(r.IntN(5))
					b.moreFor(j).retryAt = int64(r.IntN(50))
					tr.insert(j)
				}
				if op%(c.ops/60) != 0 && op != c.ops-1 {
					continue
				}
				if err := checkTree(tr, in, r); err != nil {
					t.Fatalf("op %d: %v", op, err)
				}
			}
		})
	}
}

func checkTree(tr *orderTree, in []*job, r *rand.Rand) error {
	want := slices.Clone(in)
	slices.SortFunc(want, tr.cmp)
	var got []*job
	walkTree(tr.root, &got)
	if !slices.Equal(got, want) {
		return fmt.Errorf("tree holds %d jobs out of order or wrong (want %d)", len(got), len(want))
	}
	if err := checkCounts(tr.root); err != nil {
		return err
	}
	for range 5 {
		m := stateMask(r.IntN(int(allStates)+1)) & allStates
		var sel []*job
		for _, j := range want {
			if m.has(j.state) {
				sel = append(sel, j)
			}
		}
		if tr.total(m) != len(sel) {
			return fmt.Errorf("total(%b) = %d, want %d", m, tr.total(m), len(sel))
		}
		if len(sel) == 0 {
			if _, ok := tr.seek(m, 0, nil); ok {
				return fmt.Errorf("seek found a job in an empty mask %b", m)
			}
			continue
		}
		k := r.IntN(len(sel))
		for _, dir := range []int{1, -1} {
			it, ok := tr.seek(m, k, nil)
			for i := k; ok; i += dir {
				if i < 0 || i >= len(sel) || it.job() != sel[i] {
					return fmt.Errorf("mask %b from %d dir %d: wrong job at %d", m, k, dir, i)
				}
				ok = it.step(dir)
				if !ok && i != 0 && i != len(sel)-1 {
					return fmt.Errorf("mask %b from %d dir %d: stopped early at %d of %d", m, k, dir, i, len(sel))
				}
			}
		}
	}
	return nil
}

// checkCounts verifies every node's per-state counts and separator keys.
func checkCounts(n *otNode) error {
	if n == nil {
		return nil
	}
	var c counts
	if n.leaf {
		for _, j := range n.items {
			c[j.state]++
		}
	} else {
		if len(n.kids) == 0 {
			return fmt.Errorf("internal node without children")
		}
		for i, k := range n.kids {
			if err := checkCounts(k); err != nil {
				return err
			}
			if n.mins[i] != k.first() {
				return fmt.Errorf("separator %d is not its child's first job", i)
			}
			for st := range k.cnt {
				c[st] += k.cnt[st]
			}
		}
	}
	if c != n.cnt {
		return fmt.Errorf("node counts %v, want %v", n.cnt, c)
	}
	return nil
}

// TestCountIdx checks scans over a count index large enough to use all
// three levels, against a brute-force walk.
func TestCountIdx(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	const n = 600_000
	a := &ageIndex{}
	for i := range n {
		st := Done
		if r.IntN(1000) == 0 {
			st = Failed // sparse
		} else if r.IntN(3) == 0 {
			st = Queued
		}
		a.add(JobID(i+1), st)
	}
	// A dense run of backoff jobs in the middle, and a few moves.
	for i := 300_000; i < 300_100; i++ {
		a.move(JobID(i+1), a.states[i], Backoff)
	}
	for range 1000 {
		i := r.IntN(n)
		a.move(JobID(i+1), a.states[i], JobState(1+r.IntN(5)))
	}
	masks := []stateMask{allStates, 1 << Failed, 1 << Backoff, 1<<Queued | 1<<Failed, 1 << Dispatched}
	for _, m := range masks {
		var want []JobID
		for i, st := range a.states {
			if m.has(st) {
				want = append(want, JobID(i+1))
			}
		}
		if got := a.idx.total(m); got != len(want) {
			t.Fatalf("total(%b) = %d, want %d", m, got, len(want))
		}
		for range 50 {
			if len(want) == 0 {
				break
			}
			k := r.IntN(len(want))
			lim := 1 + r.IntN(200)
			for _, dir := range []int{1, -1} {
				var got []JobID
				a.idx.scan(a, m, k, dir, lim, func(id JobID) { got = append(got, id) })
				var exp []JobID
				for i := k; i >= 0 && i < len(want) && len(exp) < lim; i += dir {
					exp = append(exp, want[i])
				}
				if !slices.Equal(got, exp) {
					t.Fatalf("scan(%b, k=%d, dir=%d, lim=%d) = %d ids, want %d (first %v vs %v)", m, k, dir, lim, len(got), len(exp), head(got), head(exp))
				}
			}
		}
		var none []JobID
		a.idx.scan(a, m, len(want), 1, 10, func(id JobID) { none = append(none, id) })
		if len(none) != 0 {
			t.Fatalf("scan past the end of %b yielded %v", m, none)
		}
	}
}

func head(s []JobID) []JobID { return s[:min(len(s), 5)] }

// TestJobsWindowsLarge compares windows over a few thousand jobs in every
// state with a brute-force answer, for every sort, both directions and
// offsets through the whole range.
func TestJobsWindowsLarge(t *testing.T) {
	br := bigBroker(t, 5000)
	br.fanout = 8
	all := func(m stateMask) []*job {
		var out []*job
		for i := 1; i <= br.jobs.n; i++ {
			if j := br.jobs.get(JobID(i)); j != nil && m.has(j.state) {
				out = append(out, j)
			}
		}
		return out
	}
	for _, sortName := range modelSorts[1:] {
		for _, text := range []string{"", "state=done", "state=failed,backoff", "state=dispatched"} {
			for _, desc := range []bool{false, true} {
				f, err := filter.Parse(text)
				if err != nil {
					t.Fatal(err)
				}
				want := all(stateMaskOf(f))
				key := parseSort(sortName, sortAge)
				slices.SortFunc(want, func(x, y *job) int {
					var c int
					switch key {
					case sortAge:
					case sortState:
						c = cmp.Compare(x.state, y.state)
					default:
						c = (&orderTree{b: br, key: key}).cmp(x, y)
					}
					c = cmp.Or(c, cmp.Compare(x.id, y.id))
					if desc {
						c = -c
					}
					return c
				})
				for off := 0; off < len(want)+10; off += 1 + len(want)/7 {
					q := admin.Query{Sort: sortName, Filter: text, Desc: desc, Offset: off, Limit: 37}
					p := br.Jobs(q)
					if p.Total != len(want) {
						t.Fatalf("%+v: total %d, want %d", q, p.Total, len(want))
					}
					for i, row := range p.Jobs {
						if row.JobID != uint64(want[off+i].id) {
							t.Fatalf("%+v: row %d is job %d, want %d", q, i, row.JobID, want[off+i].id)
						}
					}
					if exp := min(37, max(len(want)-off, 0)); len(p.Jobs) != exp {
						t.Fatalf("%+v: %d rows, want %d", q, len(p.Jobs), exp)
					}
				}
			}
		}
	}
}
