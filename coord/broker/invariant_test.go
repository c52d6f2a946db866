package broker

import (
	"fmt"
	"slices"
	"strings"

	"drover/coord/offheap"
)

// checkInvariants verifies the broker's internal consistency and returns the
// first violation found, or nil.
func checkInvariants(b *Broker) error {
	var per [nStates]int
	inList := make(map[*job]string)
	mark := func(j *job, where string) error {
		if prev, ok := inList[j]; ok {
			return fmt.Errorf("job %d in two lists: %s and %s", j.id, prev, where)
		}
		inList[j] = where
		return nil
	}
	unrt := 0
	for _, c := range b.classAll {
		n := 0
		var last uint32
		for j := c.queue.head; j != nil; j = c.queue.next(&b.jobs, j) {
			if err := mark(j, "class "+c.key); err != nil {
				return err
			}
			if j.state != Queued || b.classOf(j) != c {
				return fmt.Errorf("job %d in class queue %q but state %s", j.id, c.key, j.state)
			}
			if j.seq <= last || j.seq > b.seq {
				return fmt.Errorf("class queue %q out of order at job %d: number %d after %d (last given %d)", c.key, j.id, j.seq, last, b.seq)
			}
			last = j.seq
			n++
		}
		if n != c.queue.n {
			return fmt.Errorf("class %q queue length %d, counted %d", c.key, c.queue.n, n)
		}
		capable := 0
		for _, w := range b.sessions {
			if w.takesJobs() && Match(c.headers, w.headers) {
				capable++
			}
		}
		if capable != c.capable {
			return fmt.Errorf("class %q capable %d, want %d", c.key, c.capable, capable)
		}
		if c.capable == 0 {
			unrt += c.queue.n
		}
	}
	if unrt != b.unrt {
		return fmt.Errorf("unroutable total %d, want %d", b.unrt, unrt)
	}
	if err := checkRings(b); err != nil {
		return err
	}
	if err := checkURLs(b); err != nil {
		return err
	}
	if err := checkNames(b); err != nil {
		return err
	}
	for _, h := range b.hosts {
		n := 0
		for j := h.backoff.head; j != nil; j = h.backoff.next(&b.jobs, j) {
			if err := mark(j, "backoff "+h.name); err != nil {
				return err
			}
			if j.state != Backoff || b.hostOf(j) != h {
				return fmt.Errorf("job %d in host %q back-off list but state %s", j.id, h.name, j.state)
			}
			if !j.has(jobHostWait) || b.retryAt(j) != h.until {
				return fmt.Errorf("job %d retry at %d (its host's: %v), host %q until %d", j.id, b.retryAt(j), j.has(jobHostWait), h.name, h.until)
			}
			n++
		}
		if n != h.backoff.n {
			return fmt.Errorf("host %q back-off length %d, counted %d", h.name, h.backoff.n, n)
		}
		if err := checkHost(b, h); err != nil {
			return err
		}
		for st := Queued; st < nStates; st++ {
			c := 0
			for id := range h.ids.all() {
				if j := b.jobs.get(id); j != nil && j.state == st {
					c++
				}
			}
			if got := h.idx.total(1 << st); got != c {
				return fmt.Errorf("host %q index counts %d %s, want %d", h.name, got, st, c)
			}
		}
	}
	for i, e := range b.retry {
		j := e.j
		if err := mark(j, "retry"); err != nil {
			return err
		}
		switch {
		case j.state != Backoff:
			return fmt.Errorf("job %d waits a retry delay but is %s", j.id, j.state)
		case e.m != b.moreOf(j):
			return fmt.Errorf("job %d waits a retry delay with a side record not its own", j.id)
		case int(e.m.rpos) != i+1:
			return fmt.Errorf("job %d at retry heap position %d records %d", j.id, i+1, e.m.rpos)
		case e.m.retryAt == 0 || j.has(jobHostWait):
			return fmt.Errorf("job %d waits a retry delay with no retry time of its own", j.id)
		case i > 0 && b.retry.Less(i, (i-1)/2):
			return fmt.Errorf("retry heap out of order at job %d", j.id)
		}
	}
	for j := b.dones.head; j != nil; j = b.dones.next(&b.jobs, j) {
		if err := mark(j, "done"); err != nil {
			return err
		}
		if j.state != Done {
			return fmt.Errorf("job %d on the done list but %s", j.id, j.state)
		}
	}
	if b.cfg.DoneRetention >= 0 && b.dones.n > b.cfg.DoneRetention {
		return fmt.Errorf("%d done records kept, retention %d", b.dones.n, b.cfg.DoneRetention)
	}
	for j := b.fails.head; j != nil; j = b.fails.next(&b.jobs, j) {
		if err := mark(j, "failed"); err != nil {
			return err
		}
		if j.state != Failed {
			return fmt.Errorf("job %d on the failed list but %s", j.id, j.state)
		}
	}
	for i := 1; i <= b.jobs.n; i++ {
		j := b.jobs.get(JobID(i))
		if j == nil {
			if b.age.states[i-1] != 0 {
				return fmt.Errorf("forgotten job %d still in the age index as %s", i, b.age.states[i-1])
			}
			continue
		}
		if j.jobID() != JobID(i) {
			return fmt.Errorf("job record %d has id %d", i, j.id)
		}
		if j.state < Queued || j.state >= nStates {
			return fmt.Errorf("job %d in no state (%d)", j.id, j.state)
		}
		per[j.state]++
		if b.age.states[i-1] != j.state {
			return fmt.Errorf("job %d age index says %s, job says %s", j.id, b.age.states[i-1], j.state)
		}
		where, listed := inList[j]
		waits := strings.HasPrefix(where, "backoff ") || where == "retry"
		if !waits && (j.has(jobHostWait) || b.retryAt(j) != 0) {
			return fmt.Errorf("job %d is %s in %q with retry time %d (its host's: %v), want none", j.id, j.state, where, b.retryAt(j), j.has(jobHostWait))
		}
		switch j.state {
		case Queued, Backoff, Failed, Done:
			if !listed {
				return fmt.Errorf("job %d is %s but in no list", j.id, j.state)
			}
		default:
			if listed {
				return fmt.Errorf("job %d is %s but in list %s", j.id, j.state, inList[j])
			}
		}
		if j.state == Dispatched {
			w := b.workerOf(j)
			if w == nil || w.lost || b.sessions[w.session] != w {
				return fmt.Errorf("job %d dispatched to a worker that is not live", j.id)
			}
			if int(b.moreOf(j).heldIdx) >= len(w.held) || w.held[b.moreOf(j).heldIdx] != j {
				return fmt.Errorf("job %d not in its worker %q's slots", j.id, w.id)
			}
		} else if b.workerOf(j) != nil {
			return fmt.Errorf("job %d is %s but held by %q", j.id, j.state, b.workerOf(j).id)
		}
	}
	sum := 0
	per[Done] += b.forgot
	for st := Queued; st < nStates; st++ {
		kept := per[st]
		if st == Done {
			kept -= b.forgot
		}
		if per[st] != b.count[st] {
			return fmt.Errorf("%s count %d, counted %d", st, b.count[st], per[st])
		}
		if got := b.age.idx.total(1 << st); got != kept {
			return fmt.Errorf("age index counts %d %s, want %d", got, st, kept)
		}
		for k, t := range b.trees {
			if t != nil && t.total(1<<st) != kept {
				return fmt.Errorf("%s index counts %d %s, want %d", sortNames[k], t.total(1<<st), st, kept)
			}
		}
		sum += per[st]
	}
	if sum+b.paged+b.handed != b.jobs.n {
		return fmt.Errorf("submitted %d != queued+dispatched+backoff+done+failed %d + paged out %d + handed back %d", b.jobs.n, sum, b.paged, b.handed)
	}
	for name, bg := range b.budgets {
		var kept [nStates]int
		for id := JobID(1); int(id) <= b.jobs.n; id++ {
			if j := b.jobs.get(id); j != nil && b.crawler(j) == name {
				kept[j.state]++
			}
		}
		for st := Queued; st < nStates; st++ {
			if st != Done && kept[st] != bg.count[st] {
				return fmt.Errorf("crawl %q: %s count %d, counted %d", name, st, bg.count[st], kept[st])
			}
		}
	}
	for k, t := range b.trees {
		if t == nil {
			continue
		}
		var all []*job
		walkTree(t.root, &all)
		if want := b.jobs.n - b.forgot - b.paged - b.handed; len(all) != want {
			return fmt.Errorf("%s index holds %d jobs, want %d", sortNames[k], len(all), want)
		}
		if !slices.IsSortedFunc(all, t.cmp) {
			return fmt.Errorf("%s index out of order", sortNames[k])
		}
	}
	// Workers: slots, ready list.
	ready := 0
	var last uint64
	for w := b.ready.head; w != nil; w = w.link.next {
		if !w.takesJobs() || w.free() <= 0 || b.sessions[w.session] != w {
			return fmt.Errorf("worker %q on the ready list but cannot take a job", w.id)
		}
		if w.lastUsed < last {
			return fmt.Errorf("ready list not in LRU order at %q", w.id)
		}
		last = w.lastUsed
		ready++
	}
	if ready != b.ready.n {
		return fmt.Errorf("ready list length %d, counted %d", b.ready.n, ready)
	}
	for _, w := range b.sessions {
		if w.takesJobs() && w.free() > 0 && w.heldUntil == 0 && !w.inReady {
			return fmt.Errorf("worker %q has free slots but is not ready", w.id)
		}
		for i, j := range w.held {
			if b.workerOf(j) != w || int(b.moreOf(j).heldIdx) != i || j.state != Dispatched {
				return fmt.Errorf("worker %q slot %d holds job %d that is not its own", w.id, i, j.id)
			}
		}
		if b.workers[w.id] != w {
			return fmt.Errorf("live worker %q missing from the registry", w.id)
		}
	}
	for _, w := range b.workers {
		if w.lost && len(w.held) > 0 {
			return fmt.Errorf("lost worker %q still holds %d jobs", w.id, len(w.held))
		}
	}
	if len(b.wsorted) != len(b.workers) {
		return fmt.Errorf("sorted worker list has %d, registry %d", len(b.wsorted), len(b.workers))
	}
	return nil
}

func walkTree(n *otNode, out *[]*job) {
	if n == nil {
		return
	}
	if n.leaf {
		*out = append(*out, n.items...)
		return
	}
	for _, k := range n.kids {
		walkTree(k, out)
	}
}

// checkHost checks a host's lanes and politeness: every queued job of the
// host is in its lane in queue order, the in-flight count is its
// dispatched jobs, a lane is in its class's ring exactly when it has jobs
// and its host is not parked, and a parked host with queued jobs waits
// for a job to end (at its cap) or for a timer no later than its next
// eligible time.
func checkHost(b *Broker, h *host) error {
	n, inflight := 0, 0
	for id := range h.ids.all() {
		if j := b.jobs.get(id); j != nil {
			switch j.state {
			case Queued:
				if _, parked := b.budgets[b.crawler(j)]; !j.has(jobFree) && (!parked || !onParkedList(b, j)) {
					n++
				}
			case Dispatched:
				if !j.has(jobFree) {
					inflight++
				}
			}
		}
	}
	inLanes := 0
	var err error
	h.eachLane(func(l *lane) {
		var last uint32
		c := 0
		for j := l.q.head; j != nil; j = l.q.next(&b.jobs, j) {
			switch {
			case err != nil:
			case j.state != Queued || b.hostOf(j) != h || b.classOf(j) != l.class || j.has(jobFree) != l.free:
				err = fmt.Errorf("job %d (%s, host %q) in lane %q/%q", j.id, j.state, b.hostOf(j).name, h.name, l.class.key)
			case j.seq <= last:
				err = fmt.Errorf("lane %q/%q out of order at job %d", h.name, l.class.key, j.id)
			}
			last = j.seq
			c++
		}
		if err == nil && c != l.q.n {
			err = fmt.Errorf("lane %q/%q length %d, counted %d", h.name, l.class.key, l.q.n, c)
		}
		if want := c > 0 && !l.waits(); err == nil && l.inRing != want {
			err = fmt.Errorf("lane %q/%q in ring %v, want %v (jobs %d, parked %v)", h.name, l.class.key, l.inRing, want, c, h.parked)
		}
		if !l.free {
			inLanes += c
		}
	})
	switch {
	case err != nil:
		return err
	case inLanes != int(h.nq) || n != int(h.nq):
		return fmt.Errorf("host %q: %d jobs in lanes, %d queued, counted %d", h.name, inLanes, n, h.nq)
	case int(h.inflight) != inflight:
		return fmt.Errorf("host %q: in flight %d, dispatched jobs %d", h.name, h.inflight, inflight)
	case !h.parked && h.capNow() > 0 && h.inflight >= h.capNow():
		return fmt.Errorf("host %q: %d in flight at cap %d but not parked", h.name, h.inflight, h.capNow())
	case h.parked && h.nq > 0 && (h.capNow() == 0 || h.inflight < h.capNow()) && (h.heapIdx < 0 || h.due > h.next):
		return fmt.Errorf("host %q parked with %d jobs under its cap, no timer by %d (heap %d, due %d)", h.name, h.nq, h.next, h.heapIdx, h.due)
	}
	_, waiting := b.waiting[h]
	if waiting != (h.parked && h.nq > 0) {
		return fmt.Errorf("host %q: in waiting set %v, parked %v with %d jobs", h.name, waiting, h.parked, h.nq)
	}
	return nil
}

// onParkedList reports whether a queued job sits in its crawl's parked
// list (a paused crawl), out of its lane.
func onParkedList(b *Broker, j *job) bool {
	for pl, k := &b.budgets[b.crawler(j)].parked, b.budgets[b.crawler(j)].parked.head; k != nil; k = pl.next(&b.jobs, k) {
		if k == j {
			return true
		}
	}
	return false
}

// checkRings checks every class's ring and the politeness total.
func checkRings(b *Broker) error {
	for _, c := range b.classAll {
		n := 0
		for l := c.ring.head; l != nil; l = l.link.next {
			if !l.inRing || l.class != c || l.q.n == 0 || l.waits() {
				return fmt.Errorf("class %q ring holds lane of %q (in ring %v, jobs %d, parked %v)", c.key, l.host.name, l.inRing, l.q.n, l.host.parked)
			}
			n++
		}
		if n != c.ring.n {
			return fmt.Errorf("class %q ring length %d, counted %d", c.key, c.ring.n, n)
		}
	}
	polite := 0
	for _, h := range b.hosts {
		if h.parked {
			polite += int(h.nq)
		}
	}
	if polite != b.polite {
		return fmt.Errorf("polite total %d, want %d", b.polite, polite)
	}
	return nil
}

// checkNames verifies that the interned (crawler, processor) pairs are
// referenced by exactly the jobs whose records are kept.
func checkNames(b *Broker) error {
	refs := make(map[uint32]int)
	for i := 1; i <= b.jobs.n; i++ {
		if j := b.jobs.get(JobID(i)); j != nil {
			if j.names == 0 {
				return fmt.Errorf("job %d has no names", j.id)
			}
			refs[j.names]++
		}
	}
	return b.names.Check(refs)
}

// checkURLs verifies that the URL slots are used by exactly the jobs whose
// records are kept, each by one (offheap.Strings.Check).
func checkURLs(b *Broker) error {
	var refs []offheap.Ref
	for i := 1; i <= b.jobs.n; i++ {
		if j := b.jobs.get(JobID(i)); j != nil {
			refs = append(refs, j.urlRef())
		}
	}
	if err := b.urls.Check(refs); err != nil {
		return fmt.Errorf("job URLs: %w", err)
	}
	return nil
}
