package redis

import "container/heap"

// deadlines is each host's next lease deadline (µs) with the earliest at
// hand: a min-heap of (deadline, host) entries, stale ones skipped lazily.
type deadlines struct {
	cur map[string]int64
	h   dheap
}

type dentry struct {
	at   int64
	host string
}

type dheap []dentry

func (h dheap) Len() int           { return len(h) }
func (h dheap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h dheap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dheap) Push(x any)        { *h = append(*h, x.(dentry)) }
func (h *dheap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

func (d *deadlines) init() { d.cur = make(map[string]int64) }

// set records host's next deadline; at < 0: none.
func (d *deadlines) set(host string, at int64) {
	if at < 0 {
		delete(d.cur, host)
		return
	}
	if old, ok := d.cur[host]; ok && old == at {
		return
	}
	d.cur[host] = at
	heap.Push(&d.h, dentry{at, host})
}

func (d *deadlines) clean() {
	for d.h.Len() > 0 {
		e := d.h[0]
		if at, ok := d.cur[e.host]; ok && at == e.at {
			return
		}
		heap.Pop(&d.h)
	}
}

// min is the earliest deadline.
func (d *deadlines) min() (int64, bool) {
	d.clean()
	if d.h.Len() == 0 {
		return 0, false
	}
	return d.h[0].at, true
}

// due returns the hosts whose deadline is at or before now.
func (d *deadlines) due(now int64) map[string]struct{} {
	out := make(map[string]struct{})
	for {
		d.clean()
		if d.h.Len() == 0 || d.h[0].at > now {
			break
		}
		e := heap.Pop(&d.h).(dentry)
		out[e.host] = struct{}{}
		delete(d.cur, e.host) // the tick's script reports the next one
	}
	return out
}
