package broker

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"drover/admin"
	"drover/filter"
)

// Window limits of the console queries.
const (
	DefaultLimit = 50    // rows when a query gives no limit
	MaxLimit     = 10000 // rows at most per query (DRV/2 §13)
)

// Totals fills the broker's figures in dst: jobs by state, unroutable jobs,
// workers by state and the counters. Ledger fields and At are left alone.
func (b *Broker) Totals(dst *admin.Totals) {
	dst.Paused = b.paused
	dst.Queued = b.count[Queued] + b.paged
	dst.Dispatched = b.count[Dispatched]
	dst.Backoff = b.count[Backoff]
	dst.Done = b.count[Done]
	dst.Failed = b.count[Failed]
	dst.Unroutable = b.unrt
	dst.Polite = b.polite
	dst.WorkersIdle, dst.WorkersBusy, dst.WorkersDraining, dst.WorkersLost = 0, 0, 0, len(b.lostOrder)
	for _, w := range b.sessions {
		switch {
		case w.draining:
			dst.WorkersDraining++
		case w.heldUntil > 0:
			dst.WorkersHeld++
		case len(w.held) > 0:
			dst.WorkersBusy++
		default:
			dst.WorkersIdle++
		}
	}
	dst.Dispatches = b.dispatches
	dst.Completions = b.completions
	dst.Failures = b.failures
	dst.Throttles = b.throttles
	dst.StaleResults = b.orphans
}

// Count is the number of jobs in state st (as Totals counts them).
func (b *Broker) Count(st JobState) int { return b.count[st] }

// FreeSlots is how many jobs the workers ready for one could start now:
// the free slots of live workers that are not draining or held back.
func (b *Broker) FreeSlots() int {
	n := 0
	for w := b.ready.head; w != nil; w = w.link.next {
		n += w.free()
	}
	return n
}

// Submitted is the number of jobs ever submitted: the sum of the per-state
// counts in Totals.
func (b *Broker) Submitted() int { return b.jobs.n }

// stateMaskOf is the set of job states a filter's state term allows (all
// without one); names that are not broker states (requested, a worker
// state) add none.
func stateMaskOf(f filter.Filter) stateMask {
	names := f.Values(filter.FieldState)
	if names == nil {
		return allStates
	}
	var m stateMask
	for _, name := range names {
		if st, err := ParseState(name); err == nil {
			m |= 1 << st
		}
	}
	return m
}

// jobField is a job's value of a filter field, as filter.Filter.Job reads
// it from the job's row.
func (b *Broker) jobField(j *job, n filter.Field) (string, bool) {
	switch n {
	case filter.FieldState:
		return j.state.String(), true
	case filter.FieldHost:
		return b.hostOf(j).name, true
	case filter.FieldWorker:
		if b.workerOf(j) == nil {
			return "", true
		}
		return b.workerOf(j).id, true
	case filter.FieldCrawler:
		return b.crawler(j), true
	case filter.FieldProcessor:
		return b.names.Get(j.names).Processor, true
	case filter.FieldKey:
		return j.fp.String(), true
	case filter.FieldWait:
		return string(b.wait(j).Wire()), true
	}
	return "", false
}

// matchJob reports whether j matches every term of f (state included).
func (b *Broker) matchJob(f filter.Filter, j *job) bool {
	return f.Match(func(n filter.Field) (string, bool) { return b.jobField(j, n) }, b.urlView(j)) // Match keeps nothing
}

func window(q admin.Query) (off, lim int) {
	off, lim = max(q.Offset, 0), q.Limit
	if lim <= 0 {
		lim = DefaultLimit
	}
	return off, min(lim, MaxLimit)
}

func parseSort(s string, def sortKey) sortKey {
	for k, name := range sortNames {
		if name == s {
			return sortKey(k)
		}
	}
	return def
}

// Jobs answers a window of the jobs view. Sorts: age (default), url,
// attempts, failures, retry_at, state; Desc reverses. Filters: the grammar
// of drover/filter over job rows (filter.Filter.Job); a filter that does
// not parse matches nothing (the coordinator refuses it first).
//
// Costs: with no terms but state, a window costs O(limit × log n) through
// the indexes (age and state orders always kept; the others built on their
// first query, then kept while queries use them). worker= sorts only those
// workers' few jobs; host= with one matching host and a sort of age or
// state is a window of that host's index, else sorts the matching hosts'
// jobs. Other terms (free text, crawler=, processor=, key=) scan every job
// once, then the matches are cached: the same terms again, or narrower
// ones (as the operator types on), cost O(matches) plus the jobs submitted
// since. wait= alone visits every job in the states its words allow (a
// job's wait changes, so nothing is cached); beside other terms, their
// matches.
func (b *Broker) Jobs(q admin.Query) admin.Page {
	return b.jobsPage(q, allStates, sortAge, admin.ViewJobs)
}

// Retries answers a window of jobs in backoff or failed (default sort
// retry_at, filters as Jobs) with the host back-offs in force, then the
// hosts holding jobs back for politeness (most waiting jobs first).
func (b *Broker) Retries(q admin.Query) admin.Page {
	p := b.jobsPage(q, 1<<Backoff|1<<Failed, sortRetryAt, admin.ViewRetries)
	p.Hosts = append(b.hostRows(), b.politeRows()...)
	return p
}

func (b *Broker) jobsPage(q admin.Query, base stateMask, def sortKey, view admin.View) admin.Page {
	key := parseSort(q.Sort, def)
	off, lim := window(q)
	p := admin.Page{View: view, Offset: off}
	f, err := filter.Parse(q.Filter)
	if err != nil {
		return p
	}
	m := base & stateMaskOf(f)
	if words := f.Values(filter.FieldWait); words != nil {
		m &= waitStates(words)
	}
	rest := f.Without(filter.FieldState)
	var rows []*job
	switch {
	case f.Has(filter.FieldWorker):
		var held []*job
		want := rest.Only(filter.FieldWorker).Terms[0]
		for _, w := range b.wsorted {
			if want.MatchValue(w.id) {
				held = append(held, w.held...)
			}
		}
		rows = b.collect(held, m, rest, key, q.Desc)
	case f.Has(filter.FieldHost):
		want := rest.Only(filter.FieldHost).Terms[0]
		var hs []*host
		for name, h := range b.hosts {
			if want.MatchValue(name) {
				hs = append(hs, h)
			}
		}
		if len(hs) == 1 && len(rest.Terms) == 1 && (key == sortAge || key == sortState) {
			h := hs[0]
			p.Total = h.idx.total(m)
			b.indexWindow(&p, m, key, q.Desc, off, lim, &h.idx, hostSet{h, &b.age})
			return p
		}
		var hj []*job
		for _, h := range hs {
			for id := range h.ids.all() {
				if j := b.jobs.get(id); j != nil {
					hj = append(hj, j)
				}
			}
		}
		rows = b.collect(hj, m, rest, key, q.Desc)
	case !rest.Without(filter.FieldWait).Empty():
		rows = b.collect(b.staticMatches(rest.Without(filter.FieldWait)), m, rest.Only(filter.FieldWait), key, q.Desc)
	case rest.Has(filter.FieldWait): // a job's wait changes: no cache
		var in []*job
		b.age.idx.scan(&b.age, m, 0, 1, b.age.idx.total(m), func(id JobID) { in = append(in, b.jobs.get(id)) })
		rows = b.collect(in, m, rest, key, q.Desc)
	case key == sortAge || key == sortState:
		p.Total = b.age.idx.total(m)
		b.indexWindow(&p, m, key, q.Desc, off, lim, &b.age.idx, &b.age)
		return p
	default:
		t := b.tree(key)
		p.Total = t.total(m)
		if off >= p.Total {
			return p
		}
		p.Jobs = make([]admin.JobRow, 0, min(lim, p.Total-off))
		k, dir := off, 1
		if q.Desc {
			k, dir = p.Total-1-off, -1
		}
		var buf [8]otPos
		it, ok := t.seek(m, k, buf[:])
		for ; ok && len(p.Jobs) < lim; ok = it.step(dir) {
			p.Jobs = append(p.Jobs, b.jobRow(it.job()))
		}
		return p
	}
	p.Total = len(rows)
	if off < len(rows) {
		p.Jobs = make([]admin.JobRow, 0, min(lim, len(rows)-off))
	}
	for i := off; i < min(off+lim, len(rows)); i++ {
		p.Jobs = append(p.Jobs, b.jobRow(rows[i]))
	}
	return p
}

// indexWindow fills a window in age order, or state-then-age order, from a
// count index over a position set.
func (b *Broker) indexWindow(p *admin.Page, m stateMask, key sortKey, desc bool, off, lim int, idx *countIdx, ps posSet) {
	if off >= p.Total {
		return
	}
	p.Jobs = make([]admin.JobRow, 0, min(lim, p.Total-off))
	add := func(id JobID) { p.Jobs = append(p.Jobs, b.jobRow(b.jobs.get(id))) }
	if key == sortAge {
		if desc {
			idx.scan(ps, m, p.Total-1-off, -1, lim, add)
		} else {
			idx.scan(ps, m, off, 1, lim, add)
		}
		return
	}
	// State order: the states of m one after another, each by age.
	var order []JobState
	for st := Queued; st < nStates; st++ {
		if m.has(st) {
			order = append(order, st)
		}
	}
	if desc {
		slices.Reverse(order)
	}
	skip := off
	for _, st := range order {
		sm := stateMask(1) << st
		n := idx.total(sm)
		if skip >= n {
			skip -= n
			continue
		}
		if desc {
			idx.scan(ps, sm, n-1-skip, -1, lim-len(p.Jobs), add)
		} else {
			idx.scan(ps, sm, skip, 1, lim-len(p.Jobs), add)
		}
		skip = 0
		if len(p.Jobs) >= lim {
			return
		}
	}
}

// collect filters and sorts a candidate set (a worker's or host's jobs, or
// free-text matches) for a window.
func (b *Broker) collect(in []*job, m stateMask, f filter.Filter, key sortKey, desc bool) []*job {
	out := make([]*job, 0, len(in))
	for _, j := range in {
		if m.has(j.state) && b.matchJob(f, j) {
			out = append(out, j)
		}
	}
	t := orderTree{b: b, key: key}
	slices.SortFunc(out, func(x, y *job) int {
		c := 0
		switch key {
		case sortAge:
			c = cmp.Compare(x.id, y.id)
		case sortState:
			c = cmp.Or(cmp.Compare(x.state, y.state), cmp.Compare(x.id, y.id))
		default:
			c = t.cmp(x, y)
		}
		if desc {
			c = -c
		}
		return c
	})
	return out
}

// wait is why j waits (WaitNone when it does not).
func (b *Broker) wait(j *job) Wait {
	switch j.state {
	case Queued:
		switch {
		case b.classOf(j).capable == 0:
			return WaitUnroutable
		case b.paused:
			return WaitPaused
		case b.hostOf(j).parked && !j.has(jobFree):
			return WaitPolite
		}
	case Backoff:
		if b.retrying(j) {
			return WaitRetry
		}
		return WaitHostBackoff
	case Dispatched:
		if isPlaceholder(b.workerOf(j)) {
			return WaitReclaim // restored after a coordinator restart
		}
	}
	return WaitNone
}

// reason is the text of j's wait w: its words and detail.
func (b *Broker) reason(j *job, w Wait) string {
	switch w {
	case WaitUnroutable:
		return b.unroutableReason(b.classOf(j))
	case WaitPolite:
		return b.politeWhy(b.hostOf(j))
	case WaitRetry:
		return b.retryReason(j)
	case WaitHostBackoff:
		return b.hostOf(j).backoffReason()
	case WaitReclaim:
		return w.text("by " + b.workerOf(j).id)
	}
	return w.String()
}

func (b *Broker) jobRow(j *job) admin.JobRow {
	names := b.names.Get(j.names)
	r := admin.JobRow{
		JobID:     uint64(j.id),
		Key:       j.fp.String(),
		Crawler:   names.Crawler,
		Processor: names.Processor,
		URL:       b.url(j),
		State:     j.state.String(),
		Attempts:  int(b.jobAttempts(j)),
		Failures:  int(b.jobFailures(j)),
		Throttles: int(b.jobThrottles(j)),
		RetryAt:   b.retryTime(j),
		LastError: b.lastErr(j),
		Created:   tm(j.created),
		Updated:   tm(j.updated),
	}
	if b.workerOf(j) != nil {
		r.Worker = b.workerOf(j).id
	}
	w := b.wait(j)
	r.Reason, r.Wait = b.reason(j, w), w.Wire()
	return r
}

// Job returns one job's row with its attempt history.
func (b *Broker) Job(jid JobID) (admin.JobRow, bool) {
	j := b.jobs.get(jid)
	if j == nil {
		return admin.JobRow{}, false
	}
	r := b.jobRow(j)
	r.History = b.adminHistory(j)
	return r, true
}

// hostRows lists the hosts with a back-off level (in force or not yet
// forgiven), latest back-off end first.
func (b *Broker) hostRows() []admin.HostRow {
	rows := make([]admin.HostRow, 0, len(b.thr))
	for h := range b.thr {
		rows = append(rows, admin.HostRow{Host: h.name, Until: tm(h.until), Throttles: int(h.throttles), Jobs: h.backoff.n})
	}
	slices.SortFunc(rows, func(x, y admin.HostRow) int {
		return cmp.Or(y.Until.Compare(x.Until), strings.Compare(x.Host, y.Host))
	})
	return rows
}

var workerSorts = admin.Sorts[admin.ViewWorkers]

// Workers answers a window of the workers view (lost records included).
// Sorts: id (default), host, state, used, done, failures, since,
// last_heartbeat. Filters: the grammar of drover/filter over worker rows
// (filter.Filter.Worker); one that does not parse matches nothing. Records
// are kept sorted by id, so the default unfiltered window costs O(limit);
// other sorts and filters scan and sort the worker table (thousands of
// rows, not millions).
func (b *Broker) Workers(q admin.Query) admin.Page {
	off, lim := window(q)
	p := admin.Page{View: admin.ViewWorkers, Offset: off}
	f, err := filter.Parse(q.Filter)
	if err != nil {
		return p
	}
	key := q.Sort
	if !slices.Contains(workerSorts, key) {
		key = "id"
	}
	rows := b.wsorted
	if key != "id" || q.Desc || !f.Empty() {
		rows = make([]*worker, 0, len(b.wsorted))
		for _, w := range b.wsorted {
			if f.Match(func(n filter.Field) (string, bool) { return workerField(w, n) }, w.id, w.hostname) {
				rows = append(rows, w)
			}
		}
		slices.SortStableFunc(rows, func(x, y *worker) int {
			var c int
			switch key {
			case "host":
				c = strings.Compare(x.hostname, y.hostname)
			case "state":
				c = strings.Compare(x.stateName(), y.stateName())
			case "used":
				c = cmp.Compare(len(x.held), len(y.held))
			case "done":
				c = cmp.Compare(x.done, y.done)
			case "failures":
				c = cmp.Compare(x.failures, y.failures)
			case "since":
				c = cmp.Compare(x.since, y.since)
			case "last_heartbeat":
				c = cmp.Compare(x.seen, y.seen)
			}
			if c == 0 {
				c = strings.Compare(x.id, y.id)
			}
			if q.Desc {
				c = -c
			}
			return c
		})
	}
	p.Total = len(rows)
	for i := off; i < min(off+lim, len(rows)); i++ {
		p.Workers = append(p.Workers, b.workerRow(rows[i]))
	}
	return p
}

// workerField is a worker's value of a filter field, as
// filter.Filter.Worker reads it from the worker's row.
func workerField(w *worker, n filter.Field) (string, bool) {
	switch n {
	case filter.FieldState:
		return w.stateName(), true
	case filter.FieldHost:
		return w.hostname, true
	case filter.FieldWorker:
		return w.id, true
	}
	return "", false
}

func (b *Broker) workerRow(w *worker) admin.WorkerRow {
	r := admin.WorkerRow{
		ID:            w.id,
		Host:          w.hostname,
		Headers:       maps.Clone(w.headers),
		State:         w.stateName(),
		Slots:         w.slots,
		Used:          len(w.held),
		Done:          w.done,
		Failures:      w.failures,
		LastHeartbeat: tm(w.seen),
		Since:         tm(w.since),
		HeldUntil:     tm(w.heldUntil),
	}
	for _, j := range w.held {
		r.Jobs = append(r.Jobs, uint64(j.id))
	}
	slices.Sort(r.Jobs)
	return r
}

// textCache remembers the jobs matching the last filter on a job's fixed
// values (free text on the URL, crawler, processor, key). Those never
// change, so the set only grows with new jobs; a narrower filter
// (filter.Filter.Narrows) is a subset of it.
type textCache struct {
	f    filter.Filter
	set  bool
	ids  []JobID // ascending
	upto JobID   // jobs up to this one were considered
}

// staticMatches returns the live jobs matching f, by age; f has terms on
// fixed values only.
func (b *Broker) staticMatches(f filter.Filter) []*job {
	c := &b.text
	switch {
	case c.set && c.f.String() == f.String():
	case c.set && f.Narrows(c.f):
		kept := c.ids[:0]
		for _, id := range c.ids {
			if j := b.jobs.get(id); j != nil && b.matchJob(f, j) {
				kept = append(kept, id)
			}
		}
		c.ids = kept
	default:
		c.ids, c.upto = nil, 0
	}
	c.f, c.set = f, true
	for id := c.upto + 1; id <= JobID(b.jobs.n); id++ {
		if j := b.jobs.get(id); j != nil && b.matchJob(f, j) {
			c.ids = append(c.ids, id)
		}
	}
	c.upto = JobID(b.jobs.n)
	out := make([]*job, 0, len(c.ids))
	live := c.ids[:0]
	for _, id := range c.ids {
		if j := b.jobs.get(id); j != nil {
			out = append(out, j)
			live = append(live, id) // drop forgotten jobs for good
		}
	}
	c.ids = live
	return out
}
