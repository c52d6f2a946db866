package server

import (
	"time"

	"drover/admin"
	"drover/store"
)

// Results kept for several coordinators (Options.ClusterResults, the
// Redis Cluster store): each step's results are added to the cluster's
// results, which assigns their cursors, so view results reads every
// coordinator's results on any of them. The adds are made off the
// reactor (clusterio.go), one at a time, the results of the steps
// meanwhile in the next; a job.done or job.failed event waits for its
// result's cursor, and the events after it wait behind it (they go out in
// order, on the events socket and to the cluster's events), until the
// cluster answered the add (or refused it: the events go without their
// cursors, the results are tried again).

// ClusterResults keeps results for every coordinator sharing a store
// (store/redis.Results). Add is called by the cluster's write lane, Read
// and Bounds by its read lane (clusterio.go), Trim by the trimmer
// goroutine; their calls may do I/O.
type ClusterResults interface {
	// Add appends results and sets their cursors; a result whose cursor
	// is still 0 after an error was not added.
	Add(recs []store.ResultRecord) error
	// Bounds are the first and last cursors kept (0, 0: none).
	Bounds() (first, last uint64, err error)
	// Read hands fn the results after cursor after up to upTo, in cursor
	// order, until fn returns false.
	Read(after, upTo uint64, fn func(*store.ResultRecord) bool) error
	// Trim applies the policy's coordinator-wide limits (its Default).
	Trim(now time.Time, p *store.Retention) (deleted int, err error)
}

// resendResultsEvery is how often results the cluster did not take are
// tried again while no job finishes (one finishing tries them at once).
const resendResultsEvery = time.Second

// resendResults tries again to add the results the cluster did not
// take, at most once per resendResultsEvery, in a step where no job
// finished: without it they waited for the next job to finish, and after
// the last one, were lost at shutdown.
func (cl *cluster) resendResults() {
	r := cl.res
	if cl.results == nil || len(r.step) == 0 || cl.adds.adding || cl.now().Sub(r.sentAt) < resendResultsEvery {
		return
	}
	cl.addResults()
}

// maxUnsentResults bounds the results kept for the next step when the
// cluster did not take them.
const maxUnsentResults = 100000

// clusterAdds is the cluster part's side of the results: the add in
// flight and the events waiting for their results' cursors.
type clusterAdds struct {
	adding  bool              // an add is in flight
	pending map[uint64]bool   // jobs whose results wait for a cursor (to add, or in flight)
	cursors map[uint64]uint64 // the cursors the last add gave, for the held events
	held    []admin.Event     // events in order, the first waiting for its result's cursor
}

// addResults hands the results waiting to the cluster I/O goroutine,
// unless an add is in flight (they go with the next).
func (cl *cluster) addResults() {
	r := cl.res
	ca := &cl.adds
	if ca.pending == nil {
		ca.pending, ca.cursors = make(map[uint64]bool), make(map[uint64]uint64)
	}
	for i := range r.step {
		ca.pending[r.step[i].Job] = true
	}
	if ca.adding || len(r.step) == 0 {
		return
	}
	batch := r.step
	r.step = nil
	r.sentAt = cl.now()
	ca.adding = true
	cr := cl.results
	cl.post(func() func() {
		err := cr.Add(batch)
		return func() { cl.resultsAdded(batch, err) }
	})
}

// resultsAdded takes the cluster's answer to an add (on the reactor): the
// results it took are readable and their events get their cursors; those
// it did not take wait for the next add, before the results since (at
// most maxUnsentResults: the oldest go beyond), and their events go
// without cursors.
func (cl *cluster) resultsAdded(batch []store.ResultRecord, err error) {
	r := cl.res
	ca := &cl.adds
	ca.adding = false
	n := 0
	for i := range batch {
		rec := &batch[i]
		delete(ca.pending, rec.Job)
		if rec.Cursor == 0 {
			batch[n] = *rec
			n++
			continue
		}
		r.readable = max(r.readable, rec.Cursor)
		ca.cursors[rec.Job] = rec.Cursor
	}
	if err != nil {
		cl.log.Warn("results not kept on the cluster; tried again", "results", n, "err", err)
	}
	unsent := append(batch[:n], r.step...)
	if drop := len(unsent) - maxUnsentResults; drop > 0 {
		cl.log.Error("results lost: the cluster took none of them", "results", drop)
		unsent = unsent[drop:]
	}
	r.step = unsent
	cl.adm.dirty = true
	cl.releaseHeld()
	if err == nil && len(r.step) > 0 {
		cl.addResults() // those of the steps meanwhile
	}
}

// holdFrom is the index of the first of evs that must wait for its
// result's cursor (all of them while some wait: events go out in order);
// len(evs) when none must.
func (cl *cluster) holdFrom(evs []admin.Event) int {
	if cl.results == nil {
		return len(evs)
	}
	ca := &cl.adds
	if len(ca.held) > 0 {
		return 0
	}
	for i := range evs {
		if awaitsCursor(&evs[i], ca) {
			return i
		}
	}
	return len(evs)
}

// awaitsCursor reports whether ev is a job's end whose result waits for
// its cursor.
func awaitsCursor(ev *admin.Event, ca *clusterAdds) bool {
	return (ev.Kind == admin.EventJobDone || ev.Kind == admin.EventJobFailed) && ca.pending[ev.JobID]
}

// holdEvents keeps evs until their results' cursors come, each with its
// output noted now (the step's results know it).
func (cl *cluster) holdEvents(evs []admin.Event) {
	ca := &cl.adds
	for i := range evs {
		ev := evs[i]
		cl.res.noteCursor(&ev)
		ca.held = append(ca.held, ev)
	}
}

// releaseHeld sends the held events up to the first whose result still
// waits for its cursor, those of results just added with their cursors.
func (cl *cluster) releaseHeld() {
	ca := &cl.adds
	n := 0
	for ; n < len(ca.held); n++ {
		ev := &ca.held[n]
		if c, ok := ca.cursors[ev.JobID]; ok && (ev.Kind == admin.EventJobDone || ev.Kind == admin.EventJobFailed) {
			ev.Cursor = c
			continue
		}
		if awaitsCursor(ev, ca) {
			break
		}
	}
	clear(ca.cursors)
	if n == 0 {
		return
	}
	cl.emit(ca.held[:n], true)
	m := copy(ca.held, ca.held[n:])
	clear(ca.held[m:])
	ca.held = ca.held[:m]
}

// readClusterResults answers view results from the cluster's results,
// off the reactor (clusterquery.go).
func (cl *cluster) readClusterResults(q admin.Query) (clusterRead, admin.Page, error) {
	res := cl.res
	return func() func() (admin.Page, error) {
		return done(res.query(q)) // results.go
	}, admin.Page{}, nil
}

// trimResults applies the results' limits on the cluster: its
// coordinator-wide ones (the policy's Default) only (the trimmer's
// goroutine: results.go).
func (cl *cluster) trimResults(now time.Time, p *store.Retention) (deleted int, kept []any, err error) {
	if p.Default == (store.ResultLimits{}) {
		return 0, nil, nil
	}
	n, err := cl.results.Trim(now, p)
	return n, nil, err
}
