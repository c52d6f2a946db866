package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"drover/admin"
	"drover/coord"
	"drover/coord/id"
	"drover/filter"
)

// Job lists across coordinators (Options.ClusterJobs, the Redis Cluster
// store). View jobs lists this coordinator's own rows first, as the
// coordinator answers them (sorted, filtered, windowed), then the
// cluster's rows it does not hold, read from Redis a page at a time in the
// walk's order (store/redis.JobView): the jobs other coordinators claimed
// (state claimed, naming the coordinator), the jobs waiting in the shared
// queue (state queued) and the keys requested on hosts this coordinator
// never touched. The filter is the same (filter.Filter.Job); the sort
// applies to the own rows only. Reading the cluster's rows never loads
// the queue: a page's work is bounded, it goes on from a cursor (Page.After,
// Query.After), and an offset into them starts from the cursor a recent
// page ended at (offsetMemo), so a console scrolling down reads only what
// it shows. View waiters reads a key's waiters from Redis; a key's detail
// (view jobs with Key) says where its job is when it is not here.

// ClusterJobs reads the jobs and keys of every coordinator sharing this
// one's store (store/redis.JobView). The reactor calls Self, Host and
// NoteRetries; the cluster's read lane (clusterio.go) the others, whose
// calls may do I/O.
type ClusterJobs interface {
	// Self is this coordinator's id in the cluster.
	Self() string
	// Host is the host of key fp, when it is known here (a key this
	// coordinator touched, or one a page of the jobs view listed).
	Host(fp id.Fingerprint) (string, bool)
	// Jobs lists a page of the cluster's rows this coordinator does not
	// hold, from cursor ("": the start), of the parts named in parts
	// (letters: c claimed by other coordinators, q in the shared queue,
	// r requested on hosts this coordinator never touched), matching
	// match, the first skip passed over, at most limit; it returns the
	// rows, how many it passed over (fewer than skip when the page's work
	// ran out first) and the cursor to go on from ("": the end).
	Jobs(cursor, parts string, host func(string) bool, match func(*admin.JobRow) bool, skip, limit int) (rows []admin.JobRow, skipped int, next string, err error)
	// Waiters lists the sessions waiting on key fp of host.
	Waiters(fp id.Fingerprint, host string) (rows []admin.WaiterRow, err error)
	// Locate finds the job of key fp of host in the cluster: claimed by
	// a coordinator or waiting in the shared queue.
	Locate(fp id.Fingerprint, host string) (row admin.JobRow, ok bool, err error)
	// NoteRetries hands over this coordinator's first retries rows and
	// how many it has, for the others' retries views.
	NoteRetries(rows []admin.JobRow, total int)
	// NoteJobs hands over the first jobs this coordinator holds
	// (dispatched and backing off first, then queued), for the others'
	// jobs views.
	NoteJobs(rows []admin.JobRow)
	// Ask posts action a to coordinator c and waits (a bounded time) for
	// its answer (clusteract.go): the lines of each coordinator that
	// carried out part of it (c, or those c forwarded it to when it
	// stopped) come prefixed "on coordinator C: ".
	Ask(c string, a admin.Action) (admin.ActionResult, error)
	// Requests waits up to wait (bounded by ctx) for the actions other
	// coordinators posted to this one, and returns them with a ticket
	// each for its answer (Reply); an action read and not answered is
	// read again by the first call of a reader started again.
	Requests(ctx context.Context, wait time.Duration) (acts []admin.Action, tickets []string, err error)
	// Reply answers an action Requests read, given its ticket.
	Reply(ticket string, res admin.ActionResult) error
	// Retries lists the retries rows the other live coordinators
	// published (Coordinator set, JobID 0) and the sum of their totals.
	Retries() (rows []admin.JobRow, total int, err error)
	// NoteWorkers hands over the ids of the workers this coordinator
	// has sessions with, for the others' evict, drain and undrain
	// (clusterworkers.go).
	NoteWorkers(ids []string)
	// WorkerAt finds the other coordinator that has worker w, as the
	// coordinators last published their workers: its id ("" when none
	// has it), its peers endpoint, and whether it is alive.
	WorkerAt(w string) (coordinator, peers string, alive bool, err error)
	// MarkDrained keeps workers drained in the cluster (any coordinator
	// they say HELLO to drains them) and returns those refused (the
	// cluster keeps too many); UnmarkDrained forgets their drains and
	// says which had one; Drained reports, with no I/O (the reactor
	// calls it), whether worker w is kept drained (clusterworkers.go).
	MarkDrained(workers []string) (refused []string, err error)
	UnmarkDrained(workers []string) (had []bool, err error)
	Drained(w string) bool
}

// publishedRetries is how many of its retries rows a coordinator hands
// to NoteRetries, publishedJobs how many of its jobs to NoteJobs.
const (
	publishedRetries = 50
	publishedJobs    = 1000
)

// offsetMemo remembers where recent pages of the cluster's rows ended, per
// view and filter: an offset into them goes on from the nearest point at
// or before it instead of from the start.
type offsetMemo struct {
	points map[string][]memoPoint
}

type memoPoint struct {
	offset int // rows of the cluster's part before the cursor
	cursor string
	at     time.Time
}

// The memo's bounds: points older than memoAge are not used (the queue
// moved on), and at most memoViews filters of memoPoints points each are
// kept.
const (
	memoAge    = 30 * time.Second
	memoViews  = 64
	memoPoints = 64
)

func (m *offsetMemo) find(key string, offset int, now time.Time) (memoPoint, bool) {
	var best memoPoint
	found := false
	for _, p := range m.points[key] {
		if p.offset <= offset && now.Sub(p.at) < memoAge && (!found || p.offset > best.offset) {
			best, found = p, true
		}
	}
	return best, found
}

func (m *offsetMemo) add(key string, p memoPoint) {
	if m.points == nil || len(m.points) >= memoViews && m.points[key] == nil {
		m.points = make(map[string][]memoPoint)
	}
	ps := slices.DeleteFunc(m.points[key], func(q memoPoint) bool { return q.offset == p.offset || p.at.Sub(q.at) >= memoAge })
	if len(ps) >= memoPoints {
		ps = ps[1:]
	}
	m.points[key] = append(ps, p)
}

// clusterJobsState is the Server's part for ClusterJobs: the offset memo
// and when the retries were last noted.
type clusterJobsState struct {
	memo         offsetMemo
	retriesNoted time.Time
}

// noteRetries hands this coordinator's first retries rows, and the
// first jobs it holds, to the cluster about once a second (each a window
// of an index of the broker's: O(rows × log jobs)).
func (cl *cluster) noteRetries(now time.Time) {
	cj := cl.cj
	if cj == nil || now.Sub(cl.jobs.retriesNoted) < time.Second {
		return
	}
	cl.jobs.retriesNoted = now
	if p, err := cl.c.Query(now, admin.Query{View: admin.ViewRetries, Limit: publishedRetries}); err == nil {
		cj.NoteRetries(p.Jobs, p.Total)
	}
	p, err := cl.c.Query(now, admin.Query{View: admin.ViewJobs, Filter: "state=dispatched,backoff", Limit: publishedJobs})
	if err != nil {
		return
	}
	if len(p.Jobs) < publishedJobs {
		if q, err := cl.c.Query(now, admin.Query{View: admin.ViewJobs, Filter: "state=queued", Limit: publishedJobs - len(p.Jobs)}); err == nil {
			p.Jobs = append(p.Jobs, q.Jobs...)
		}
	}
	cj.NoteJobs(p.Jobs)
	cj.NoteWorkers(cl.workerIDs()) // clusterworkers.go
}

// readClusterRetries answers view retries on a Redis Cluster store:
// this coordinator's own rows (sorted, filtered, windowed), then the rows
// the other live coordinators published (each its first 50, next retry
// first), filtered alike, read off the reactor (clusterquery.go).
func (cl *cluster) readClusterRetries(q admin.Query) (clusterRead, admin.Page, error) {
	page, err := cl.c.Query(cl.now(), q)
	if err != nil {
		return nil, page, err
	}
	f, _ := filter.Parse(q.Filter) // the coordinator parsed it
	cj := cl.cj
	return func() func() (admin.Page, error) {
		rows, _, err := cj.Retries()
		if err != nil {
			return done(page, fmt.Errorf("query retries: the other coordinators': %w", err))
		}
		rows = slices.DeleteFunc(rows, func(r admin.JobRow) bool { return !f.Job(&r) })
		limit := q.Limit
		if limit == 0 || limit > coord.MaxWindow {
			limit = coord.MaxWindow
		}
		co := min(max(q.Offset-page.Total, 0), len(rows))
		rows = rows[co:]
		page.Jobs = append(page.Jobs, rows[:min(len(rows), max(limit-len(page.Jobs), 0))]...)
		page.Total += co + len(rows)
		return done(page, nil)
	}, page, nil
}

// clusterParts are the parts of the cluster's rows a filter's state
// term lets through.
func clusterParts(f filter.Filter) string {
	states := f.Values(filter.FieldState)
	parts := ""
	for _, p := range [][2]string{{"c", "claimed"}, {"q", "queued"}, {"r", "requested"}} {
		if p[0] == "r" && f.Has(filter.FieldWait) {
			continue // a requested key does not wait in a queue
		}
		if states == nil || slices.Contains(states, p[1]) {
			parts += p[0]
		}
	}
	return parts
}

// readClusterJobs answers views jobs and waiters on a Redis Cluster
// store (above): this coordinator's rows now, the cluster's read off the
// reactor (clusterquery.go).
func (cl *cluster) readClusterJobs(q admin.Query) (clusterRead, admin.Page, error) {
	now := cl.now()
	if q.View == admin.ViewWaiters {
		return cl.readClusterWaiters(now, q)
	}
	if q.Key != "" {
		return cl.readClusterJobDetail(now, q)
	}
	cj := cl.cj
	f, err := filter.Parse(q.Filter)
	if err != nil {
		return nil, admin.Page{}, coord.Errorf(coord.ErrInvalid, "query %s: %w", q.View, err)
	}
	if q.Offset < 0 || q.Limit < 0 {
		return nil, admin.Page{}, coord.Errorf(coord.ErrInvalid, "query %s: offset %d, limit %d: want >= 0", q.View, q.Offset, q.Limit)
	}
	limit := q.Limit
	if limit == 0 || limit > coord.MaxWindow {
		limit = coord.MaxWindow
	}
	w := &jobsWalk{q: q, f: f, page: admin.Page{View: q.View, Offset: q.Offset}}
	if q.After == "" {
		if w.page, err = cl.c.Query(now, q); err != nil {
			return nil, w.page, err
		}
		w.own = w.page.Total
	}
	w.co = max(q.Offset-w.own, 0) // offset into the cluster's rows
	w.parts = clusterParts(f)
	w.memoKey = string(q.View) + "\x00" + f.String()
	w.cursor, w.skip = q.After, w.co
	if q.After == "" && w.co > 0 {
		if p, ok := cl.jobs.memo.find(w.memoKey, w.co, now); ok {
			w.cursor, w.skip, w.base = p.cursor, w.co-p.offset, p.offset
		}
	}
	w.want = limit - len(w.page.Jobs)
	w.next = w.cursor
	if w.parts == "" {
		return nil, cl.clusterJobsPage(w), nil
	}
	// With want 0 (the page is full of own rows): only where the
	// cluster's begin.
	match := f.Job
	if f.Without(filter.FieldState).Empty() {
		match = nil // the parts are the states asked for: every row matches
	}
	var host func(string) bool
	if t := f.Only(filter.FieldHost); !t.Empty() {
		// Only the hosts of the term are read (a job's queue is its
		// URL's host).
		host = func(h string) bool { return t.Terms[0].MatchValue(h) }
	}
	return func() func() (admin.Page, error) {
		rows, skipped, next, err := cj.Jobs(w.cursor, w.parts, host, match, w.skip, w.want)
		return func() (admin.Page, error) {
			if err != nil {
				if strings.Contains(err.Error(), "cursor") && q.After != "" {
					return w.page, coord.Errorf(coord.ErrInvalid, "query %s: after: %w", q.View, err)
				}
				return w.page, fmt.Errorf("query %s: the cluster's rows: %w", q.View, err)
			}
			w.rows, w.skipped, w.next = rows, skipped, next
			if q.After == "" && next != "" && w.want > 0 {
				cl.jobs.memo.add(w.memoKey, memoPoint{offset: w.base + skipped + len(rows), cursor: next, at: cl.now()})
			}
			return cl.clusterJobsPage(w), nil
		}
	}, w.page, nil
}

// jobsWalk is one query of the jobs view on a Redis Cluster store: its
// own rows and where the cluster's begin (before the read), then what
// the read found.
type jobsWalk struct {
	q       admin.Query
	f       filter.Filter
	page    admin.Page // this coordinator's rows
	own     int        // this coordinator's rows in all (0 with After)
	co      int        // the offset into the cluster's rows
	parts   string     // the parts of the cluster's rows asked for
	memoKey string
	cursor  string // where the read starts
	skip    int    // rows it passes over there
	base    int    // the offset of cursor into the cluster's rows
	want    int    // rows it lists at most
	// The read's answer.
	rows    []admin.JobRow
	skipped int
	next    string
}

// clusterJobsPage is the page of w, its own rows then the cluster's, and
// its total (on the reactor).
func (cl *cluster) clusterJobsPage(w *jobsWalk) admin.Page {
	page := w.page
	page.Jobs = append(page.Jobs, w.rows...)
	page.After = w.next
	if w.q.After == "" && w.q.Offset+len(page.Jobs) < w.own {
		page.After = "" // own rows go on past this page: the client pages on by offset
	}
	// The total: this coordinator's rows, and the cluster's as its
	// counters say (jobs claimed by the others, in the shared queue) when
	// nothing but a state term filters, else those read so far (and one
	// more when the walk goes on).
	seen := w.co + len(w.rows)
	if w.skipped < w.skip {
		seen = w.base + w.skipped
	}
	if w.next != "" {
		seen++
	}
	counted := 0
	if w.f.Without(filter.FieldState).Empty() {
		counted = cl.clusterCounted(w.parts)
	}
	page.Total = w.own + max(seen, counted)
	return page
}

// clusterCounted is the cluster's jobs of parts not on this coordinator,
// by the cluster view's counters: claimed by the other live coordinators
// (their queued and running jobs, as they last published them) and
// waiting in the shared queue.
func (cl *cluster) clusterCounted(parts string) int {
	if cl.view == nil {
		return 0
	}
	cv := cl.view()
	if cv == nil {
		return 0
	}
	n := 0
	if strings.Contains(parts, "q") {
		n += int(cv.Queued)
	}
	if strings.Contains(parts, "c") {
		self := cl.cj.Self()
		for _, c := range cv.Coordinators {
			if c.Alive && c.ID != self {
				n += c.Queued + c.Dispatched
			}
		}
	}
	return n
}

// readClusterJobDetail answers view jobs with Key on a Redis Cluster
// store: the coordinator's answer when it holds the job; else, for a key,
// where its job is in the cluster (claimed by a coordinator, or in the
// shared queue), with its waiters, read off the reactor.
func (cl *cluster) readClusterJobDetail(now time.Time, q admin.Query) (clusterRead, admin.Page, error) {
	page, err := cl.c.Query(now, q)
	if err == nil && len(page.Jobs) > 0 && page.Jobs[0].JobID != 0 {
		return nil, page, nil
	}
	fp, perr := id.ParseFingerprint(q.Key)
	if perr != nil {
		if err == nil {
			return nil, page, nil
		}
		return nil, page, err
	}
	cj := cl.cj
	host, ok := keyHost(cj, fp, q.Filter)
	if !ok {
		if err == nil {
			return nil, page, nil
		}
		return nil, page, fmt.Errorf("%w; its host is not known to this coordinator, so the cluster was not searched: give it with the filter host=HOST (the host of the key's URL, with its port if the URL has one)", err)
	}
	return func() func() (admin.Page, error) {
		row, found, lerr := cj.Locate(fp, host)
		var ws []admin.WaiterRow
		var werr error
		if lerr == nil && found {
			ws, werr = cj.Waiters(fp, host)
		}
		switch {
		case lerr != nil:
			return done(page, fmt.Errorf("query jobs: key %s: %w", fp, lerr))
		case !found && err != nil:
			return done(page, err)
		case !found:
			return done(page, nil)
		}
		if werr == nil {
			page.Waiters = ws
			row.Waiters = len(ws)
		}
		page.View, page.Jobs, page.Total = admin.ViewJobs, []admin.JobRow{row}, 1
		return done(page, nil)
	}, page, nil
}

// keyHost is the host of key fp: as this coordinator knows it, else the
// one value of the query's host term (filterText).
func keyHost(cj ClusterJobs, fp id.Fingerprint, filterText string) (string, bool) {
	if h, ok := cj.Host(fp); ok {
		return h, true
	}
	f, err := filter.Parse(filterText)
	if t := f.Only(filter.FieldHost); err == nil && len(t.Terms) == 1 && len(t.Terms[0].Values) == 1 {
		return t.Terms[0].Values[0], true
	}
	return "", false
}

// readClusterWaiters answers view waiters on a Redis Cluster store: the
// coordinator's answer, with the waiters of the key read from Redis off
// the reactor (every coordinator's sessions, named "sN on coordinator
// C").
func (cl *cluster) readClusterWaiters(now time.Time, q admin.Query) (clusterRead, admin.Page, error) {
	page, err := cl.c.Query(now, q)
	if err != nil || q.Key == "" {
		return nil, page, err
	}
	fp, err := id.ParseFingerprint(q.Key)
	if err != nil {
		return nil, page, coord.Errorf(coord.ErrInvalid, "query waiters: key %q: %w", q.Key, err)
	}
	cj := cl.cj
	host, ok := keyHost(cj, fp, q.Filter)
	if !ok {
		return nil, page, nil
	}
	f, _ := filter.Parse(q.Filter)  // the coordinator parsed it
	f = f.Without(filter.FieldHost) // the key's host: every waiter's
	return func() func() (admin.Page, error) {
		ws, err := cj.Waiters(fp, host)
		if err != nil {
			return done(page, fmt.Errorf("query waiters: %w", err))
		}
		coord.WindowWaiters(&page, ws, f, q)
		return done(page, nil)
	}, page, nil
}
