package coord

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"drover/admin"
	"drover/coord/broker"
	"drover/coord/id"
	"drover/coord/ledger"
	"drover/filter"
)

// sessionName renders a session number the way the console shows it.
func sessionName(s id.Session) string { return "s" + strconv.FormatUint(uint64(s), 10) }

// Totals fills the console header's figures.
func (c *Coordinator) Totals(now time.Time) admin.Totals {
	var t admin.Totals
	c.brk.Totals(&t)
	lc := c.led.Counts()
	t.At = now
	t.KeysRequested = lc.Requested
	t.KeysQueued = lc.Queued + c.pagedKeys // page.go: those left in the store count too
	t.KeysDone = lc.Done
	t.Waiters = lc.Waiters
	t.DedupHits = c.dedupHits
	t.Malformed = c.malformed
	t.Paused = c.brk.Paused()
	return t
}

// UncountDuplicates takes back n of the duplicate submits counted
// (Totals.DedupHits): the server's submit memo found them to be a
// producer's resend of keys the same request already got accepted, which
// it answers as accepted (docs/PROTOCOL.md §6.11).
func (c *Coordinator) UncountDuplicates(n int) {
	c.dedupHits -= min(uint64(n), c.dedupHits)
}

// Settled reports what Totals(now).Settled() does (nothing queued,
// running, backing off or requested, and something finished) without
// building the totals: the server asks after every step that changed
// anything.
func (c *Coordinator) Settled() bool {
	b := c.brk
	if b.Count(broker.Queued)+b.Count(broker.Dispatched)+b.Count(broker.Backoff) > 0 {
		return false
	}
	return c.led.Counts().Requested == 0 && b.Count(broker.Done)+b.Count(broker.Failed) > 0
}

// Query answers one window of one console view. It never copies or sorts a
// whole table: the broker and the ledger keep the indexes.
func (c *Coordinator) Query(now time.Time, q admin.Query) (admin.Page, error) {
	if q.Offset < 0 || q.Limit < 0 {
		return admin.Page{}, errorf(ErrInvalid, "query %s: offset %d, limit %d: want >= 0", q.View, q.Offset, q.Limit)
	}
	if q.Limit == 0 || q.Limit > MaxWindow {
		q.Limit = MaxWindow
	}
	f, err := filter.Parse(q.Filter)
	if err != nil {
		return admin.Page{}, errorf(ErrInvalid, "query %s: %w", q.View, err)
	}
	switch q.View {
	case admin.ViewWorkers:
		return c.brk.Workers(q), nil
	case admin.ViewJobs:
		if q.Key != "" {
			return c.jobDetail(now, q)
		}
		return c.jobs(q, f), nil
	case admin.ViewRetries:
		return c.brk.Retries(q), nil
	case admin.ViewWaiters:
		return c.waiters(now, q, f)
	case admin.ViewEvents:
		return c.events.window(q, f), nil
	}
	return admin.Page{}, errorf(ErrInvalid, "query: unknown view %q: want workers, jobs, waiters, retries or events", q.View)
}

// MaxWindow caps the rows of one query.
const MaxWindow = 10000

// jobDetail answers a Jobs query with Key set: the job (by decimal job id) or
// the requested key (by fingerprint), with its history.
func (c *Coordinator) jobDetail(now time.Time, q admin.Query) (admin.Page, error) {
	page := admin.Page{View: admin.ViewJobs}
	if n, err := strconv.ParseUint(q.Key, 10, 64); err == nil {
		row, ok := c.brk.Job(broker.JobID(n))
		if !ok {
			return page, errorf(ErrNotFound, "query jobs: no job %d", n)
		}
		page.Jobs, page.Total = []admin.JobRow{row}, 1
		return page, nil
	}
	fp, err := id.ParseFingerprint(q.Key)
	if err != nil {
		return page, errorf(ErrInvalid, "query jobs: key %q: want a job id or a key fingerprint: %w", q.Key, err)
	}
	page.Waiters = c.waiterRows(now, fp)
	if j, ok := c.jobOfKey(fp); ok {
		if row, ok := c.brk.Job(j); ok {
			page.Jobs, page.Total = []admin.JobRow{row}, 1
			return page, nil
		}
	}
	rec, ok := c.led.Lookup(now, fp)
	if !ok {
		return page, errorf(ErrNotFound, "query jobs: no key %s", fp)
	}
	page.Jobs, page.Total = []admin.JobRow{c.keyRow(fp, rec)}, 1
	return page, nil
}

// jobs answers the jobs view: the broker's jobs (sorted and windowed by
// the broker), then the keys held in requested, which have no job, oldest
// first. A state term without requested leaves the keys out; one with
// requested only leaves the jobs out. A wait term leaves the keys out (a
// key without a job does not wait: admin.JobRow.Wait).
func (c *Coordinator) jobs(q admin.Query, f filter.Filter) admin.Page {
	states := f.Values(filter.FieldState)
	withKeys := (states == nil || slices.Contains(states, ledger.Requested.String())) && !f.Has(filter.FieldWait)
	if withKeys && len(states) == 1 {
		return c.requested(q, f)
	}
	page := c.brk.Jobs(q)
	if !withKeys {
		return page
	}
	// The window continues into the keys where the jobs end.
	lim := min(q.Limit, broker.MaxLimit)
	keys := c.requested(admin.Query{View: q.View, Offset: max(q.Offset-page.Total, 0), Limit: lim - len(page.Jobs)}, f)
	page.Total += keys.Total
	if len(page.Jobs) < lim {
		page.Jobs = append(page.Jobs, keys.Jobs...)
	}
	return page
}

// requested lists the keys held in requested that match f, oldest first:
// a window of the ledger's list when only a state term filters, else a
// scan of every requested key.
func (c *Coordinator) requested(q admin.Query, f filter.Filter) admin.Page {
	page := admin.Page{View: q.View, Offset: q.Offset}
	if f.Without(filter.FieldState).Empty() {
		page.Total = c.led.Counts().Requested
		for _, rec := range c.led.Requested(q.Offset, q.Limit) {
			page.Jobs = append(page.Jobs, c.keyRow(rec.FP, rec))
		}
		return page
	}
	for _, rec := range c.led.Requested(0, c.led.Counts().Requested) {
		row := c.keyRow(rec.FP, rec)
		if !f.Job(&row) {
			continue
		}
		if page.Total >= q.Offset && len(page.Jobs) < q.Limit {
			page.Jobs = append(page.Jobs, row)
		}
		page.Total++
	}
	return page
}

// waiters lists requested keys (with their queue lengths) and the FIFO of
// the selected key (Query.Key; by default the first listed key).
func (c *Coordinator) waiters(now time.Time, q admin.Query, f filter.Filter) (admin.Page, error) {
	page := c.requested(q, filter.Filter{})
	page.View = admin.ViewWaiters
	var fp id.Fingerprint
	switch {
	case q.Key != "":
		k, err := id.ParseFingerprint(q.Key)
		if err != nil {
			return page, errorf(ErrInvalid, "query waiters: key %q: %w", q.Key, err)
		}
		fp = k
	case len(page.Jobs) > 0:
		fp, _ = id.ParseFingerprint(page.Jobs[0].Key)
	default:
		return page, nil
	}
	WindowWaiters(&page, c.waiterRows(now, fp), f, q)
	return page, nil
}

// WindowWaiters makes ws, the FIFO of one key, the rows of a waiters page:
// those f matches, sorted as q asks (by position, their order, the
// default; session or waiting time), windowed by q's offset and limit (0
// or above MaxWindow: MaxWindow). Total counts the waiters that match, not
// the requested keys listed beside them. ws is reordered in place.
func WindowWaiters(page *admin.Page, ws []admin.WaiterRow, f filter.Filter, q admin.Query) {
	ws = slices.DeleteFunc(ws, func(w admin.WaiterRow) bool { return !f.Waiter(&w) })
	// A key's waiters are a short FIFO: sorted here.
	slices.SortStableFunc(ws, func(a, b admin.WaiterRow) int {
		var c int
		switch q.Sort {
		case "session":
			c = strings.Compare(a.Session, b.Session)
		case "since":
			c = a.Since.Compare(b.Since)
		}
		c = cmp.Or(c, cmp.Compare(a.Position, b.Position))
		if q.Desc {
			c = -c
		}
		return c
	})
	limit := q.Limit
	if limit <= 0 || limit > MaxWindow {
		limit = MaxWindow
	}
	page.Total = len(ws)
	ws = ws[min(max(q.Offset, 0), len(ws)):]
	page.Waiters = ws[:min(limit, len(ws))]
}

func (c *Coordinator) waiterRows(now time.Time, fp id.Fingerprint) []admin.WaiterRow {
	ws := c.led.Waiters(fp)
	rows := make([]admin.WaiterRow, 0, len(ws))
	for i, w := range ws {
		name := sessionName(w.Session)
		if ss, ok := c.sessions[w.Session]; ok {
			name += " (" + ss.name + ")"
		}
		rows = append(rows, admin.WaiterRow{Position: i + 1, Session: name, Since: w.Since})
	}
	return rows
}

func (c *Coordinator) keyRow(fp id.Fingerprint, rec ledger.Record) admin.JobRow {
	row := admin.JobRow{
		Key:       fp.String(),
		Crawler:   rec.Key.Crawler,
		Processor: rec.Key.Processor,
		URL:       rec.Key.URL,
		State:     rec.State.String(),
		Waiters:   rec.Waiters,
		Created:   rec.Since,
		Updated:   rec.Since,
	}
	if rec.Owner != 0 {
		row.Owner = sessionName(rec.Owner)
		if ss, ok := c.sessions[rec.Owner]; ok {
			row.Owner += " (" + ss.name + ")"
		}
	}
	return row
}

// Act carries out an operator action. Workers are named by their stable id,
// jobs by their decimal id. Targets that cannot be acted on are reported one
// by one; the others are acted on.
func (c *Coordinator) Act(now time.Time, a admin.Action) (admin.ActionResult, error) {
	var res admin.ActionResult
	perTarget := func(f func(string) error) {
		for _, t := range a.Targets {
			if err := f(t); err != nil {
				res.Errors = append(res.Errors, err.Error())
				continue
			}
			res.Affected++
		}
	}
	needTargets := func() error {
		if len(a.Targets) == 0 {
			return errorf(ErrInvalid, "action %s: no targets: want at least one", a.Kind)
		}
		return nil
	}
	switch a.Kind {
	case admin.ActEvict:
		if err := needTargets(); err != nil {
			return res, err
		}
		perTarget(func(w string) error { _, err := c.brk.Evict(now, w); return err })
	case admin.ActDrain:
		if err := needTargets(); err != nil {
			return res, err
		}
		perTarget(func(w string) error { return c.brk.Drain(now, w) })
	case admin.ActUndrain:
		if err := needTargets(); err != nil {
			return res, err
		}
		perTarget(func(w string) error { return c.brk.Undrain(now, w) })
	case admin.ActRequeue:
		if err := needTargets(); err != nil {
			return res, err
		}
		perTarget(func(t string) error {
			n, err := strconv.ParseUint(t, 10, 64)
			if err != nil {
				return errorf(ErrInvalid, "requeue %q: want a decimal job id", t)
			}
			return c.requeue(now, broker.JobID(n))
		})
	case admin.ActRequeueFailed:
		// One by one, so each key goes back to queued in the ledger too.
		// Refused jobs stay failed: skip past them.
		for skip := 0; ; {
			page := c.brk.Jobs(admin.Query{View: admin.ViewJobs, Filter: "state=failed", Offset: skip, Limit: MaxWindow})
			if len(page.Jobs) == 0 {
				break
			}
			for _, row := range page.Jobs {
				if err := c.requeue(now, broker.JobID(row.JobID)); err != nil {
					res.Errors = append(res.Errors, err.Error())
					skip++
					continue
				}
				res.Affected++
			}
		}
	case admin.ActPause:
		if !c.brk.Paused() {
			c.brk.Pause(now)
			res.Affected = 1
		}
	case admin.ActResume:
		if c.brk.Paused() {
			c.brk.Resume(now)
			res.Affected = 1
		}
	default:
		return res, errorf(ErrInvalid, "action %q: unknown: want evict, drain, undrain, requeue, requeue-failed, pause or resume", a.Kind)
	}
	return res, nil
}

// requeue puts job j back in the queue now and its key back to queued in
// the ledger (it may have been marked done or failed): every broker job's
// key is queued in the ledger while the job is live.
//
// A finished job whose key is being worked again (a newer job, or a session
// holding it in requested) is refused: requeueing it would let two workers
// do the same work.
func (c *Coordinator) requeue(now time.Time, j broker.JobID) error {
	row, ok := c.brk.Job(j)
	if !ok {
		return errorf(ErrNotFound, "requeue job %d: no such job", j)
	}
	k := id.Key{Crawler: row.Crawler, Processor: row.Processor, URL: row.URL}
	fp := k.Fingerprint()
	if row.State == "done" || row.State == "failed" {
		if rec, ok := c.led.Lookup(now, fp); ok && rec.State != ledger.Done {
			return errorf(ErrConflict, "requeue job %d: its key %s is %s again by other work; not requeued", j, row.URL, rec.State)
		}
	}
	if row.State == "failed" {
		if err := c.requeueShared(now, j, k, fp); err != nil { // shared.go
			return err
		}
	}
	if err := c.brk.Requeue(now, j); err != nil {
		return err
	}
	c.led.Requeue(now, k, fp)
	if row.State == "dispatched" {
		// Taken from a running worker: it must be told to stop the job.
		if s, ok := c.workerSession(row.Worker); ok {
			c.cancels = append(c.cancels, Cancel{Session: s, Run: broker.Run{Job: j, Attempt: row.Attempts}})
		}
	}
	return nil
}

// eventRing keeps the most recent events for the Events view. A key
// event's Key (the fingerprint in hex) is made when the view reads it, not
// for each of the thousands of keys a step may move.
type eventRing struct {
	buf  []ringEvent
	next int
	n    int
}

type ringEvent struct {
	ev  admin.Event
	fp  id.Fingerprint
	hex bool // ev.Key is fp in hex, still to be made
}

func newEventRing(size int) eventRing { return eventRing{buf: make([]ringEvent, size)} }

func (r *eventRing) add(e admin.Event) { r.put(ringEvent{ev: e}) }

// addKey keeps e, whose Key is fp's hex form.
func (r *eventRing) addKey(e admin.Event, fp id.Fingerprint) {
	r.put(ringEvent{ev: e, fp: fp, hex: true})
}

func (r *eventRing) put(e ringEvent) {
	r.buf[r.next] = e
	r.next = (r.next + 1) % len(r.buf)
	if r.n < len(r.buf) {
		r.n++
	}
}

// window returns the events matching f (filter.Filter.Event) newest first
// (by seq; Desc: oldest first).
func (r *eventRing) window(q admin.Query, f filter.Filter) admin.Page {
	page := admin.Page{View: admin.ViewEvents, Offset: q.Offset}
	skipped := 0
	for i := 0; i < r.n; i++ {
		k := i
		if q.Desc {
			k = r.n - 1 - i
		}
		re := &r.buf[(r.next-1-k+2*len(r.buf))%len(r.buf)]
		e := re.ev
		if re.hex {
			e.Key = re.fp.String()
		}
		if !f.Event(&e) {
			continue
		}
		page.Total++
		if skipped < q.Offset {
			skipped++
			continue
		}
		if len(page.Events) < q.Limit {
			page.Events = append(page.Events, e)
		}
	}
	return page
}
