package tui

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"drover/admin"
	"drover/coord/id"
	"drover/filter"
)

// memBackend is a TEST BACKEND, not a coordinator. It is a small in-memory
// table of workers, jobs, waiters, host back-offs and events with just the
// semantics the console's actions need (evict removes a worker and requeues
// its jobs uncharged, drain and undrain change its state, requeue moves
// failed or backed-off jobs to the queue, pause stops dispatch), so the
// console can be driven end to end without the real coordinator.
//
// Windows in the default order with no filter are sliced directly, in
// O(limit), which is what the 1M-job benchmark exercises; a filter or a sort
// copies and sorts the matching rows, which is fine for test-sized tables.
type memBackend struct {
	mu       sync.Mutex
	now      func() time.Time
	endpoint string

	workers []*admin.WorkerRow // sorted by id
	jobs    []admin.JobRow     // creation order
	index   map[string]int     // key -> position in jobs; nil until needed
	byJob   map[uint64]int     // job id -> position in jobs; nil until needed
	waiters map[string][]admin.WaiterRow
	hosts   []admin.HostRow
	events  []admin.Event // oldest first
	nextSeq uint64
	paused  bool

	dispatches uint64
	totals     *admin.Totals // cached until the next mutation

	changed   chan struct{}
	closeOnce sync.Once

	err     error // while set, every call fails with it
	block   bool  // while set, calls wait for their context to end
	acts    []admin.Action
	queries []admin.Query
	maxLim  int
}

var _ Backend = (*memBackend)(nil)

func newMemBackend(now func() time.Time) *memBackend {
	return &memBackend{
		now:      now,
		endpoint: "embedded",
		waiters:  map[string][]admin.WaiterRow{},
		changed:  make(chan struct{}, 1),
	}
}

// Changed implements Backend.
func (b *memBackend) Changed() <-chan struct{} { return b.changed }

// Endpoint implements Backend.
func (b *memBackend) Endpoint() string { return b.endpoint }

// notify signals a change, coalesced: a pending signal absorbs new ones.
func (b *memBackend) notify() {
	select {
	case b.changed <- struct{}{}:
	default:
	}
}

// close closes the Changed channel, as a backend does when it shuts down.
func (b *memBackend) close() { b.closeOnce.Do(func() { close(b.changed) }) }

// gate applies the injected failure modes.
func (b *memBackend) gate(ctx context.Context) error {
	b.mu.Lock()
	err, block := b.err, b.block
	b.mu.Unlock()
	if block {
		<-ctx.Done()
		return ctx.Err()
	}
	return err
}

func (b *memBackend) setErr(err error) { b.mu.Lock(); b.err = err; b.mu.Unlock() }
func (b *memBackend) setBlock(v bool)  { b.mu.Lock(); b.block = v; b.mu.Unlock() }

// mutate changes the table under the lock and signals the change.
func (b *memBackend) mutate(f func(b *memBackend)) {
	b.mu.Lock()
	f(b)
	b.totals = nil
	b.index, b.byJob = nil, nil
	b.mu.Unlock()
	b.notify()
}

func (b *memBackend) actions() []admin.Action {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.acts)
}

func (b *memBackend) queryLog() []admin.Query {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.queries)
}

// addWorker registers a worker (kept sorted by id).
func (b *memBackend) addWorker(w admin.WorkerRow) {
	ww := w
	i, _ := slices.BinarySearchFunc(b.workers, w.ID, func(x *admin.WorkerRow, id string) int { return cmp.Compare(x.ID, id) })
	b.workers = slices.Insert(b.workers, i, &ww)
}

// addJob appends a job; an empty key is computed from the key fields.
func (b *memBackend) addJob(j admin.JobRow) {
	if j.Key == "" {
		j.Key = id.Key{Crawler: j.Crawler, Processor: j.Processor, URL: j.URL}.Fingerprint().String()
	}
	b.jobs = append(b.jobs, j)
	b.index, b.byJob = nil, nil
}

func (b *memBackend) addEvent(e admin.Event) {
	b.nextSeq++
	e.Seq = b.nextSeq
	b.events = append(b.events, e)
}

func (b *memBackend) buildIndex() {
	if b.index != nil {
		return
	}
	b.index = make(map[string]int, len(b.jobs))
	b.byJob = make(map[uint64]int, len(b.jobs))
	for i := range b.jobs {
		b.index[b.jobs[i].Key] = i
		if b.jobs[i].JobID != 0 {
			b.byJob[b.jobs[i].JobID] = i
		}
	}
}

// Totals implements Backend, counting once per mutation.
func (b *memBackend) Totals(ctx context.Context) (admin.Totals, error) {
	if err := b.gate(ctx); err != nil {
		return admin.Totals{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.totals == nil {
		t := admin.Totals{Paused: b.paused}
		for i := range b.jobs {
			switch b.jobs[i].State {
			case "queued":
				t.Queued++
				t.KeysQueued++
				if strings.HasPrefix(b.jobs[i].Reason, "unroutable") {
					t.Unroutable++
				}
			case "dispatched":
				t.Dispatched++
				t.KeysQueued++
			case "backoff":
				t.Backoff++
				t.KeysQueued++
			case "done":
				t.Done++
				t.KeysDone++
			case "failed":
				t.Failed++
				t.KeysDone++
			case "requested":
				t.KeysRequested++
			}
		}
		for _, w := range b.workers {
			switch w.State {
			case "idle":
				t.WorkersIdle++
			case "busy":
				t.WorkersBusy++
			case "draining":
				t.WorkersDraining++
			case "lost":
				t.WorkersLost++
			}
		}
		for _, ws := range b.waiters {
			t.Waiters += len(ws)
		}
		b.totals = &t
	}
	t := *b.totals
	t.At = b.now()
	t.Dispatches = b.dispatches
	return t, nil
}

// Query implements Backend.
func (b *memBackend) Query(ctx context.Context, q admin.Query) (admin.Page, error) {
	if err := b.gate(ctx); err != nil {
		return admin.Page{}, err
	}
	if q.Offset < 0 || q.Limit < 0 {
		return admin.Page{}, fmt.Errorf("query %s: offset %d, limit %d: want both >= 0", q.View, q.Offset, q.Limit)
	}
	f, err := filter.Parse(q.Filter)
	if err != nil {
		return admin.Page{}, fmt.Errorf("query %s: %w", q.View, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.queries = append(b.queries, q)
	b.maxLim = max(b.maxLim, q.Limit)
	page := admin.Page{View: q.View, Offset: q.Offset}
	switch q.View {
	case admin.ViewWorkers:
		rows := b.workers
		if !f.Empty() || q.Sort != "" || q.Desc {
			rows = selectSort(rows, f.Worker,
				workerLess(q.Sort), q.Desc)
		}
		page.Total = len(rows)
		for _, w := range window(rows, q) {
			c := *w
			c.Headers = maps.Clone(w.Headers)
			c.Jobs = slices.Clone(w.Jobs)
			page.Workers = append(page.Workers, c)
		}
	case admin.ViewJobs, admin.ViewRetries:
		if q.View == admin.ViewJobs && q.Key != "" {
			b.buildIndex()
			if i, ok := b.index[q.Key]; ok {
				j := b.jobs[i]
				j.History = slices.Clone(j.History)
				page.Jobs, page.Total = []admin.JobRow{j}, 1
			}
			return page, nil
		}
		retries := q.View == admin.ViewRetries
		if f.Empty() && q.Sort == "" && !q.Desc && !retries {
			// The fast path: a window of the creation order, O(limit).
			page.Total = len(b.jobs)
			lo, hi := min(q.Offset, len(b.jobs)), min(q.Offset+q.Limit, len(b.jobs))
			for i := lo; i < hi; i++ {
				j := b.jobs[i]
				j.History = nil
				page.Jobs = append(page.Jobs, j)
			}
			break
		}
		ptrs := make([]*admin.JobRow, 0, len(b.jobs))
		for i := range b.jobs {
			ptrs = append(ptrs, &b.jobs[i])
		}
		rows := selectSort(ptrs, func(j *admin.JobRow) bool {
			if retries && j.State != "backoff" && j.State != "failed" {
				return false
			}
			return f.Job(j)
		}, jobLess(q.Sort), q.Desc)
		page.Total = len(rows)
		for _, j := range window(rows, q) {
			c := *j
			c.History = nil
			page.Jobs = append(page.Jobs, c)
		}
		if retries {
			page.Hosts = slices.Clone(b.hosts)
		}
	case admin.ViewWaiters:
		ws := b.waiters[q.Key]
		ptrs := make([]*admin.WaiterRow, len(ws))
		for i := range ws {
			ptrs[i] = &ws[i]
		}
		rows := selectSort(ptrs, f.Waiter, waiterLess(q.Sort), q.Desc)
		page.Total = len(rows)
		for _, w := range window(rows, q) {
			page.Waiters = append(page.Waiters, *w)
		}
	case admin.ViewEvents:
		ptrs := make([]*admin.Event, 0, len(b.events))
		for i := len(b.events) - 1; i >= 0; i-- { // newest first
			ptrs = append(ptrs, &b.events[i])
		}
		rows := ptrs
		if !f.Empty() || q.Sort != "" || q.Desc {
			rows = selectSort(ptrs, f.Event, eventLess(q.Sort), q.Desc)
		}
		page.Total = len(rows)
		for _, e := range window(rows, q) {
			page.Events = append(page.Events, *e)
		}
	default:
		return admin.Page{}, fmt.Errorf("query: view %q: want workers, jobs, waiters, retries or events", q.View)
	}
	return page, nil
}

func window[T any](rows []T, q admin.Query) []T {
	lo, hi := min(q.Offset, len(rows)), min(q.Offset+q.Limit, len(rows))
	return rows[lo:hi]
}

// selectSort filters and stably sorts a copy; less nil keeps the order.
func selectSort[T any](rows []T, keep func(T) bool, less func(a, b T) int, desc bool) []T {
	out := make([]T, 0, len(rows))
	for _, r := range rows {
		if keep(r) {
			out = append(out, r)
		}
	}
	if less != nil {
		slices.SortStableFunc(out, less)
	}
	if desc {
		slices.Reverse(out)
	}
	return out
}

func workerLess(sort string) func(a, b *admin.WorkerRow) int {
	switch sort {
	case "host":
		return func(a, b *admin.WorkerRow) int { return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.ID, b.ID)) }
	case "state":
		return func(a, b *admin.WorkerRow) int { return cmp.Or(cmp.Compare(a.State, b.State), cmp.Compare(a.ID, b.ID)) }
	case "used":
		return func(a, b *admin.WorkerRow) int { return cmp.Or(cmp.Compare(a.Used, b.Used), cmp.Compare(a.ID, b.ID)) }
	case "done":
		return func(a, b *admin.WorkerRow) int { return cmp.Or(cmp.Compare(a.Done, b.Done), cmp.Compare(a.ID, b.ID)) }
	case "failures":
		return func(a, b *admin.WorkerRow) int {
			return cmp.Or(cmp.Compare(a.Failures, b.Failures), cmp.Compare(a.ID, b.ID))
		}
	case "last_heartbeat":
		return func(a, b *admin.WorkerRow) int {
			return cmp.Or(a.LastHeartbeat.Compare(b.LastHeartbeat), cmp.Compare(a.ID, b.ID))
		}
	case "since":
		return func(a, b *admin.WorkerRow) int { return cmp.Or(a.Since.Compare(b.Since), cmp.Compare(a.ID, b.ID)) }
	}
	return func(a, b *admin.WorkerRow) int { return cmp.Compare(a.ID, b.ID) }
}

func jobLess(sort string) func(a, b *admin.JobRow) int {
	by := func(f func(j *admin.JobRow) int) func(a, b *admin.JobRow) int {
		return func(a, b *admin.JobRow) int { return cmp.Or(f(a)-f(b), cmp.Compare(a.URL, b.URL)) }
	}
	switch sort {
	case "url":
		return func(a, b *admin.JobRow) int { return cmp.Compare(a.URL, b.URL) }
	case "state":
		return func(a, b *admin.JobRow) int { return cmp.Or(cmp.Compare(a.State, b.State), cmp.Compare(a.URL, b.URL)) }
	case "owner":
		return func(a, b *admin.JobRow) int { return cmp.Or(cmp.Compare(a.Owner, b.Owner), cmp.Compare(a.URL, b.URL)) }
	case "worker":
		return func(a, b *admin.JobRow) int {
			return cmp.Or(cmp.Compare(a.Worker, b.Worker), cmp.Compare(a.URL, b.URL))
		}
	case "waiters":
		return by(func(j *admin.JobRow) int { return j.Waiters })
	case "attempts":
		return by(func(j *admin.JobRow) int { return j.Attempts })
	case "failures":
		return by(func(j *admin.JobRow) int { return j.Failures })
	case "throttles":
		return by(func(j *admin.JobRow) int { return j.Throttles })
	case "retry_at":
		return func(a, b *admin.JobRow) int { return cmp.Or(a.RetryAt.Compare(b.RetryAt), cmp.Compare(a.URL, b.URL)) }
	case "created":
		return func(a, b *admin.JobRow) int { return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.URL, b.URL)) }
	}
	return nil // creation order
}

func waiterLess(sort string) func(a, b *admin.WaiterRow) int {
	switch sort {
	case "session":
		return func(a, b *admin.WaiterRow) int { return cmp.Compare(a.Session, b.Session) }
	case "since":
		return func(a, b *admin.WaiterRow) int { return a.Since.Compare(b.Since) }
	}
	return func(a, b *admin.WaiterRow) int { return cmp.Compare(a.Position, b.Position) }
}

func eventLess(sort string) func(a, b *admin.Event) int {
	switch sort {
	case "seq", "at":
		return func(a, b *admin.Event) int { return cmp.Compare(a.Seq, b.Seq) }
	case "kind":
		return func(a, b *admin.Event) int { return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(b.Seq, a.Seq)) }
	case "worker":
		return func(a, b *admin.Event) int { return cmp.Or(cmp.Compare(a.Worker, b.Worker), cmp.Compare(b.Seq, a.Seq)) }
	}
	return nil // newest first
}

// Act implements Backend with the semantics DESIGN.md §3 gives the actions.
func (b *memBackend) Act(ctx context.Context, a admin.Action) (admin.ActionResult, error) {
	if err := b.gate(ctx); err != nil {
		return admin.ActionResult{}, err
	}
	var res admin.ActionResult
	var actErr error
	b.mutate(func(b *memBackend) {
		b.acts = append(b.acts, admin.Action{Kind: a.Kind, Targets: slices.Clone(a.Targets)})
		now := b.now()
		switch a.Kind {
		case admin.ActEvict, admin.ActDrain, admin.ActUndrain:
			for _, t := range a.Targets {
				i := slices.IndexFunc(b.workers, func(w *admin.WorkerRow) bool { return w.ID == t })
				if i < 0 {
					res.Errors = append(res.Errors, "worker "+t+": not registered")
					continue
				}
				w := b.workers[i]
				switch a.Kind {
				case admin.ActEvict:
					b.buildIndex()
					for _, jid := range w.Jobs {
						if k, ok := b.byJob[jid]; ok {
							j := &b.jobs[k]
							j.State, j.Worker, j.Updated = "queued", "", now
							j.History = append(j.History, admin.Attempt{Worker: w.ID, At: now, Outcome: "evicted"})
						}
					}
					b.workers = slices.Delete(b.workers, i, i+1)
					b.addEvent(admin.Event{At: now, Kind: "worker.evicted", Worker: w.ID})
				case admin.ActDrain:
					w.State = "draining"
				case admin.ActUndrain:
					w.State = "idle"
					if w.Used > 0 {
						w.State = "busy"
					}
				}
				res.Affected++
			}
		case admin.ActRequeue:
			b.buildIndex()
			for _, t := range a.Targets {
				n, err := strconv.ParseUint(t, 10, 64)
				if err != nil {
					res.Errors = append(res.Errors, fmt.Sprintf("job %q: not a job id", t))
					continue
				}
				k, ok := b.byJob[n]
				if !ok {
					res.Errors = append(res.Errors, "job "+t+": unknown")
					continue
				}
				if j := &b.jobs[k]; !requeue(j, now) {
					res.Errors = append(res.Errors, "job "+t+" is "+j.State+", want failed or backoff")
					continue
				}
				res.Affected++
			}
		case admin.ActRequeueFailed:
			for i := range b.jobs {
				if b.jobs[i].State == "failed" && requeue(&b.jobs[i], now) {
					res.Affected++
				}
			}
		case admin.ActPause, admin.ActResume:
			b.paused = a.Kind == admin.ActPause
			kind := admin.EventBrokerResumed
			if b.paused {
				kind = admin.EventBrokerPaused
			}
			b.addEvent(admin.Event{At: now, Kind: kind})
		default:
			actErr = fmt.Errorf("action %q: unknown", a.Kind)
		}
	})
	return res, actErr
}

func requeue(j *admin.JobRow, now time.Time) bool {
	if j.State != "failed" && j.State != "backoff" {
		return false
	}
	j.State, j.RetryAt, j.Reason, j.Updated = "queued", time.Time{}, "", now
	j.History = append(j.History, admin.Attempt{At: now, Outcome: "requeued"})
	return true
}

// errUnavailable is the failure tests inject.
var errUnavailable = errors.New("coordinator unavailable")
