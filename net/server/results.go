package server

import (
	"encoding/base64"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"drover/admin"
	"drover/clock"
	"drover/coord"
	"drover/coord/broker"
	"drover/filter"
	"drover/store"
)

// Results (issue 23): every finished job's result (output, outcome, error,
// attempt, worker, finish time) gets a cursor, a number that only grows,
// and is kept: with a store, in the same batch as its job's done or failed
// state (so it is durable exactly when the job is, and readable only
// then); without one, in memory. Admin QUERY view results reads them by
// cursor (docs/PROTOCOL.md §13).

// ResultsOptions keep finished jobs' results (Options.Results).
type ResultsOptions struct {
	// MaxAge deletes results that finished longer ago (0: no age limit).
	MaxAge time.Duration
	// MaxBytes deletes the oldest results while the rest take more (0:
	// no size limit; in memory it is then DefaultMemoryResultBytes).
	MaxBytes int64
	// TrimEvery is how often, with a store, a goroutine applies the limits
	// (default 1 minute). In memory they are applied as results arrive.
	TrimEvery time.Duration
}

// DefaultMemoryResultBytes bounds results kept in memory when
// ResultsOptions.MaxBytes is 0.
const DefaultMemoryResultBytes = 256 << 20

// Bounds of one results page: rows scanned (the filter may skip them) and
// the encoded size of the rows (the body limit is 16 MiB).
const (
	resultsScan      = 10000
	resultsPageBytes = 12 << 20
	defaultResults   = 100
)

// resultLog is the Server's results part: the cursors, the results of
// the step for its batch and its events, what is readable, the results
// view and the trimmer (on a Redis Cluster store, the cluster part adds
// the results: clusterresults.go). Nil without Options.Results. The reactor goroutine owns
// it; policy is read by the trimmer too.
type resultLog struct {
	opts     ResultsOptions
	policy   atomic.Pointer[store.Retention] // the options' limits and the crawls' own; read by the trimmer
	last     uint64                          // the last cursor assigned
	readable uint64                          // the last cursor durable (readable)
	step     []store.ResultRecord            // this step's, for the next batch (store); on a cluster, those not taken yet
	sentAt   time.Time                       // on a cluster: when results were last added
	marks    []resultMark                    // applied batches' last cursors, in order
	mem      []store.ResultRecord            // without a store: the results kept
	trimmed  time.Time                       // without a store: when the policy was last applied to mem
	memBytes int64
	byJob    map[uint64]int // this step's finished jobs: index in stepFin
	stepFin  []stepResult

	st      *store.Store   // nil without a store: kept in memory
	cluster ClusterResults // Options.ClusterResults: kept on the cluster
	changed func()         // tells consoles (CHANGED): results became readable
}

// stepResult is a result of the current step, for its job's event.
type stepResult struct {
	cursor uint64
	output []byte
}

type resultMark struct{ batch, cursor uint64 }

// newResults sets up the results (Options.Results o; nil: none) after the
// restore: kept in st (nil: in memory) or on cluster.
func newResults(o *ResultsOptions, st *store.Store, cluster ClusterResults, changed func()) (*resultLog, error) {
	if o == nil {
		return nil, nil
	}
	r := &resultLog{opts: *o, st: st, cluster: cluster, changed: changed}
	if st == nil && r.opts.MaxBytes == 0 {
		r.opts.MaxBytes = DefaultMemoryResultBytes
	}
	r.setRetention(nil)
	if st != nil {
		last, err := st.LastResultCursor()
		if err != nil {
			return nil, fmt.Errorf("results: %w", err)
		}
		r.last, r.readable = last, last
	}
	return r, nil
}

// keepStep gives the step's finished jobs their cursors: in memory they
// are kept at once, with a store they go into the step's batch, on a
// cluster (Options.ClusterResults) the cluster part cl adds them to the
// cluster's now, with those it did not take before (which a step with
// none tries again once per resendResultsEvery). now is the server's
// clock.
func (r *resultLog) keepStep(now func() time.Time, fs []broker.Finished, cl *cluster) {
	if r == nil {
		return
	}
	if len(fs) == 0 {
		cl.resendResults() // clusterresults.go
		return
	}
	cluster := r.cluster != nil // cursors given by the cluster (clusterresults.go)
	r.keep(now, fs, cluster, r.st != nil)
	if cluster {
		cl.addResults() // clusterresults.go
	}
}

// keep makes the results of finished jobs fs: kept in memory at once
// (neither cluster nor stored), else for the step's batch or the cluster,
// numbered by the cluster when it adds them (cursor 0 until then). now is
// the server's clock.
func (r *resultLog) keep(now func() time.Time, fs []broker.Finished, cluster, stored bool) {
	clear(r.byJob)
	r.stepFin = r.stepFin[:0]
	for i := range fs {
		f := &fs[i]
		var cur uint64 // 0 on the cluster until Add
		if !cluster {
			r.last++
			cur = r.last
		}
		if r.byJob == nil {
			r.byJob = make(map[uint64]int)
		}
		r.byJob[uint64(f.Job)] = len(r.stepFin)
		r.stepFin = append(r.stepFin, stepResult{cursor: cur, output: f.Output})
		rec := store.ResultRecord{
			Cursor: cur, Job: uint64(f.Job), Key: f.Key, Outcome: "ok", Error: f.Error,
			Attempt: f.Attempt, Worker: f.Worker, At: f.At, Output: f.Output,
		}
		switch {
		case f.Skipped != "":
			rec.Outcome = f.Skipped // budget, cancelled
		case f.Failed:
			rec.Outcome = "failed"
		}
		if rec.At.IsZero() {
			rec.At = now()
		}
		rec.Error = strings.ToValidUTF8(rec.Error, "\uFFFD")
		rec.Worker = strings.ToValidUTF8(rec.Worker, "\uFFFD")
		if !stored && !cluster {
			r.mem = append(r.mem, rec)
			r.memBytes += memSize(&rec)
			r.readable = r.last
			r.changed()
			continue
		}
		r.step = append(r.step, rec)
	}
	if !stored && !cluster {
		r.trimMemory(now())
	}
}

func memSize(r *store.ResultRecord) int64 {
	return int64(len(r.Output)+len(r.Error)+len(r.Key.URL)+len(r.Key.Crawler)+len(r.Key.Processor)+len(r.Worker)) + 64
}

// trimMemory applies the retention policy to the results kept in memory,
// at most once a second (it reads them all); their total stays under the
// memory bound (MaxBytes) after every step whatever the crawls' own
// limits.
func (r *resultLog) trimMemory(now time.Time) {
	if now.Sub(r.trimmed) < time.Second && now.After(r.trimmed) {
		cut := 0
		for cut < len(r.mem) && r.memBytes > r.opts.MaxBytes {
			r.memBytes -= memSize(&r.mem[cut])
			cut++
		}
		if cut > 0 {
			n := copy(r.mem, r.mem[cut:])
			clear(r.mem[n:])
			r.mem = r.mem[:n]
		}
		return
	}
	r.trimmed = now
	p := r.policy.Load()
	drop := make([]bool, len(r.mem))
	p.Drop(now, len(r.mem), func(i int) (string, time.Time, int64) {
		return r.mem[i].Key.Crawler, r.mem[i].At, memSize(&r.mem[i])
	}, drop)
	n := 0
	for i := range r.mem {
		if drop[i] {
			r.memBytes -= memSize(&r.mem[i])
			continue
		}
		r.mem[n] = r.mem[i]
		n++
	}
	cut := 0
	for cut < n && r.memBytes > r.opts.MaxBytes {
		r.memBytes -= memSize(&r.mem[cut])
		cut++
	}
	n = copy(r.mem, r.mem[cut:n])
	clear(r.mem[n:])
	r.mem = r.mem[:n]
}

// setRetention gives the results the retention policy of the options and
// the crawls' own limits (after a crawl is defined or restored).
func (r *resultLog) setRetention(crawls map[string]*crawlState) {
	if r == nil {
		return
	}
	p := &store.Retention{Default: store.ResultLimits{MaxAge: r.opts.MaxAge, MaxBytes: r.opts.MaxBytes}}
	for name, cs := range crawls {
		if cs.def.ResultsMaxAge > 0 || cs.def.ResultsMaxBytes > 0 {
			if p.PerCrawler == nil {
				p.PerCrawler = map[string]store.ResultLimits{}
			}
			p.PerCrawler[name] = store.ResultLimits{MaxAge: time.Duration(cs.def.ResultsMaxAge) * time.Second, MaxBytes: cs.def.ResultsMaxBytes}
		}
	}
	r.policy.Store(p)
}

// noteCursor gives a job.done or job.failed event of the step its result's
// cursor, and the output when it is small text.
func (r *resultLog) noteCursor(ev *admin.Event) {
	if r == nil || len(r.byJob) == 0 || (ev.Kind != admin.EventJobDone && ev.Kind != admin.EventJobFailed) {
		return
	}
	i, ok := r.byJob[ev.JobID]
	if !ok {
		return
	}
	sr := &r.stepFin[i]
	ev.Cursor = sr.cursor
	if len(sr.output) <= admin.MaxEventOutput && utf8.Valid(sr.output) {
		ev.Output = string(sr.output)
	}
}

// pending reports whether the step has results for a batch.
func (r *resultLog) pending() bool { return r != nil && len(r.step) > 0 }

// into adds the step's results to its batch b.
func (r *resultLog) into(b *store.Batch) {
	if r == nil || len(r.step) == 0 {
		return
	}
	for i := range r.step {
		if err := b.PutResult(&r.step[i]); err != nil {
			break // recorded in the batch: Apply fails it as a whole
		}
	}
}

// mark notes that batch seq holds the step's results.
func (r *resultLog) mark(seq uint64) {
	if r == nil || len(r.step) == 0 {
		return
	}
	r.marks = append(r.marks, resultMark{batch: seq, cursor: r.step[len(r.step)-1].Cursor})
	clear(r.step)
	r.step = r.step[:0]
}

// durableUpTo makes the results of batches up to done readable.
func (r *resultLog) durableUpTo(done uint64) {
	if r == nil {
		return
	}
	n := 0
	for n < len(r.marks) && r.marks[n].batch <= done {
		r.readable = r.marks[n].cursor
		n++
	}
	if n > 0 {
		m := copy(r.marks, r.marks[n:])
		r.marks = r.marks[:m]
		r.changed() // a following consumer reads on CHANGED
	}
}

// query answers QUERY view results.
// The error comes with the ERROR code to answer. On a cluster it runs off
// the reactor (clusterresults.go): it then reads nothing the reactor
// changes.
func (r *resultLog) query(q admin.Query) (admin.Page, error) {
	page := admin.Page{View: admin.ViewResults}
	if r == nil {
		return page, coord.Errorf(coord.ErrNotFound, "view results: this coordinator keeps no results")
	}
	f, err := filter.Parse(q.Filter)
	if err != nil {
		return page, coord.Errorf(coord.ErrInvalid, "view results: %w", err)
	}
	if other := f.Without(filter.FieldCrawler, filter.FieldProcessor); !other.Empty() {
		return page, coord.Errorf(coord.ErrInvalid, "view results: filter %q: want only crawler= and processor= terms", other)
	}
	limit := q.Limit
	if limit == 0 {
		limit = defaultResults
	}
	page.Next = max(q.From, 0)
	scanned, size := 0, 0
	take := func(rec *store.ResultRecord) bool {
		if scanned >= resultsScan || len(page.Results) >= limit {
			return false
		}
		if !f.Match(func(n filter.Field) (string, bool) {
			if n == filter.FieldCrawler {
				return rec.Key.Crawler, true
			}
			return rec.Key.Processor, true
		}) {
			scanned++
			page.Next = rec.Cursor
			return true
		}
		row := resultRow(rec)
		n := len(row.Output)*6 + base64.StdEncoding.EncodedLen(len(row.OutputBase64)) + len(rec.Error)*6 + len(rec.Key.URL)*6 + 512
		if len(page.Results) > 0 && size+n > resultsPageBytes {
			return false
		}
		size += n
		scanned++
		page.Results = append(page.Results, row)
		page.Next = rec.Cursor
		return true
	}
	if r.st == nil && r.cluster == nil {
		page.Last = r.readable
		if len(r.mem) > 0 {
			page.First = r.mem[0].Cursor
		}
		i := sort.Search(len(r.mem), func(i int) bool { return r.mem[i].Cursor > q.From })
		for ; i < len(r.mem) && take(&r.mem[i]); i++ {
		}
		if i == len(r.mem) {
			page.Next = max(page.Next, r.readable)
		}
		page.Total = len(page.Results)
		return page, nil
	}
	// In the store or on the cluster (clusterresults.go).
	first, upTo, read, err := r.stored()
	if err != nil {
		return page, fmt.Errorf("view results: %w", err)
	}
	page.First, page.Last = first, upTo
	stopped := false
	err = read(q.From, upTo, func(rec *store.ResultRecord) bool {
		if !take(rec) {
			stopped = true
		}
		return !stopped
	})
	if err != nil {
		return page, fmt.Errorf("view results: %w", err)
	}
	if !stopped {
		page.Next = max(page.Next, upTo)
	}
	page.Total = len(page.Results)
	return page, nil
}

// stored are the first cursor kept, the last readable and the
// reader of the results in the store or, with Options.ClusterResults, on
// the cluster (the page's Last is the cluster's then).
func (r *resultLog) stored() (first, upTo uint64, read func(after, upTo uint64, fn func(*store.ResultRecord) bool) error, err error) {
	if cr := r.cluster; cr != nil {
		first, upTo, err = cr.Bounds()
		return first, upTo, cr.Read, err
	}
	first, err = r.st.FirstResultCursor()
	return first, r.readable, r.st.ReadResults, err
}

// resultRow is a result as the admin protocol carries it.
func resultRow(r *store.ResultRecord) admin.Result {
	row := admin.Result{
		Cursor: r.Cursor, JobID: r.Job, Crawler: r.Key.Crawler, Processor: r.Key.Processor, URL: r.Key.URL,
		Outcome: r.Outcome, Error: r.Error, Attempt: r.Attempt, Worker: r.Worker, FinishedAt: r.At,
	}
	switch {
	case len(r.Output) == 0:
	case len(r.Output) <= admin.MaxTextOutput && utf8.Valid(r.Output):
		row.Output = string(r.Output)
	default:
		row.OutputBase64 = r.Output
	}
	return row
}

// startTrimmer starts the goroutine that applies the results' limits to
// the store or the cluster (cl's) on clk's time, and returns the function
// that stops it.
func (r *resultLog) startTrimmer(clk clock.Clock, log *slog.Logger, cl *cluster) (stop func()) {
	if r == nil || r.st == nil && r.cluster == nil {
		return func() {}
	}
	every := r.opts.TrimEvery
	if every <= 0 {
		every = time.Minute
	}
	policy := &r.policy
	trim := r.trimStored
	if r.cluster != nil {
		trim = cl.trimResults // clusterresults.go
	}
	return repeat(clk, every, true, func() {
		p := policy.Load()
		if !p.Limited() {
			return
		}
		n, kept, err := trim(clk.Now(), p)
		switch {
		case err != nil:
			log.Error("results trim", "err", err)
		case n > 0:
			log.Info("results trimmed", append([]any{"deleted", n}, kept...)...)
		}
	})
}

// trimStored applies the results' limits to the store; kept are log
// attributes of what is left.
func (r *resultLog) trimStored(now time.Time, p *store.Retention) (deleted int, kept []any, err error) {
	n, st, err := r.st.TrimResults(now, p)
	return n, []any{"kept", st.Count, "bytes", st.Bytes, "first", st.First}, err
}
