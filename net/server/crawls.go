package server

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"drover/admin"
	"drover/coord"
	"drover/coord/broker"
	"drover/crawl"
	"drover/store"
)

// Crawl definitions (issue 23): ACTION define-crawl names a crawl (the
// crawler part of its keys) and gives it a scope, a maximum depth and a
// page budget. The server keeps the definitions (in the store, when there
// is one: written before ACTED is sent), gives seeds of a defined crawler
// submitted without a payload the crawl payload that carries the
// definition to the workers, and has the broker hold the page budget,
// whose count it persists in the same batch as the dispatches that spend
// it.

// crawlSet is the Server's crawls part: it owns the crawl definitions by
// name and their states, restores them and writes them (to the store,
// what the step's batch carries; on a Redis Cluster store, to the
// cluster: clustercrawls.go), gives the coordinator their page budgets
// and states, counts their pages and jobs done, carries out the crawl
// ACTIONs (define-crawl; pause, resume, cancel and requeue-failed naming
// a crawl) and answers view crawls. The reactor goroutine owns it.
type crawlSet struct {
	byName map[string]*crawlState

	// With Options.ClusterCrawls (clustercrawls.go): the cluster's crawls,
	// when they were last read, and whether a read is in flight.
	cc      ClusterCrawls
	synced  time.Time
	syncing bool

	// What it uses, given by New.
	c   *coord.Coordinator
	dur *durable   // nil without a store
	res *resultLog // the crawls' own results limits; nil without Options.Results
	adm *dialogue  // its dirty flag: consoles are told CHANGED
	cl  *cluster   // its write lane, for the syncs (clusterio.go)
	log *slog.Logger
	now func() time.Time
}

// crawlState is one crawl: defined (define-crawl), or only paused or
// cancelled by name.
type crawlState struct {
	def     admin.Crawl
	dirty   bool // def.Pages or def.Done changed since it was written
	defined bool // by define-crawl: its seeds get the crawl payload
	rate    crawlRate
	cluster admin.Crawl // Options.ClusterCrawls: the cluster's figures, last read (clustercrawls.go)
}

// crawlRate counts a crawl's jobs finished ok per second of the server's
// clock, for the last rateWindow seconds: as they finish here, or, with
// Options.ClusterCrawls, as the cluster's count grows between reads.
type crawlRate struct {
	first int64 // the second of the first finish counted (0: none yet)
	sec   [rateWindow + 1]int64
	n     [rateWindow + 1]int
}

// rateWindow is the seconds PagesPerSec averages over.
const rateWindow = 10

// add counts n finishes at now.
func (r *crawlRate) add(now time.Time, n int) {
	t := now.Unix()
	if r.first == 0 {
		r.first = t
	}
	i := t % int64(len(r.sec))
	if r.sec[i] != t {
		r.sec[i], r.n[i] = t, 0
	}
	r.n[i] += n
}

// perSec is the finishes per second over the whole seconds before now,
// at most rateWindow of them.
func (r *crawlRate) perSec(now time.Time) float64 {
	t := now.Unix()
	span := min(t-r.first, rateWindow)
	if r.first == 0 || span <= 0 {
		return 0
	}
	sum := 0
	for i := range r.sec {
		if r.sec[i] >= t-span && r.sec[i] < t {
			sum += r.n[i]
		}
	}
	return float64(sum) / float64(span)
}

// The crawl states an operator sets (admin.Crawl.State, as stored).
var crawlStates = map[string]broker.CrawlState{
	"": broker.CrawlRunning, admin.CrawlRunning: broker.CrawlRunning, admin.CrawlPaused: broker.CrawlPaused, admin.CrawlCancelled: broker.CrawlCancelled,
}

// restore reads the definitions from the store (or the cluster) and
// gives the broker their budgets and counts.
func (set *crawlSet) restore() error {
	set.byName = make(map[string]*crawlState)
	if set.clustered() {
		return set.sync(set.now()) // clustercrawls.go
	}
	if set.dur == nil {
		return nil
	}
	defer set.res.setRetention(set.byName) // results.go: the crawls' own limits
	return set.dur.st.ReadCrawls(func(name string, v []byte) error {
		var c admin.Crawl
		if err := json.Unmarshal(v, &c); err != nil || c.Name != name {
			return fmt.Errorf("crawl definition %q in the store: %q does not decode to it (%v)", name, v, err)
		}
		st, ok := crawlStates[c.State]
		if !ok {
			return fmt.Errorf("crawl definition %q in the store: state %q, want running, paused or cancelled", name, c.State)
		}
		c.Queued, c.Running, c.Backoff, c.Failed, c.PagesPerSec = 0, 0, 0, 0, 0 // live figures: not kept
		set.byName[name] = &crawlState{def: c, defined: c.Scope != ""}
		set.c.SetBudget(name, c.MaxPages, c.Pages)
		if st != broker.CrawlRunning {
			set.c.SetCrawlState(set.now(), name, st)
		}
		return nil
	})
}

// define checks and stores a definition (ACTION define-crawl, or
// Options.Crawls); with a store, it returns once the definition is
// durable.
func (set *crawlSet) define(now time.Time, c admin.Crawl) (admin.ActionResult, error) {
	sc, err := crawl.ParseScope(c.Scope)
	switch {
	case err != nil:
		return admin.ActionResult{}, fmt.Errorf("define-crawl %s: %w", c.Name, err)
	case c.MaxDepth < 0 || c.MaxPages < 0:
		return admin.ActionResult{}, fmt.Errorf("define-crawl %s: max_depth %d, max_pages %d: want 0 (no limit) or more", c.Name, c.MaxDepth, c.MaxPages)
	case c.ResultsMaxAge < 0 || c.ResultsMaxBytes < 0:
		return admin.ActionResult{}, fmt.Errorf("define-crawl %s: results_max_age %d, results_max_bytes %d: want 0 (the coordinator's) or more", c.Name, c.ResultsMaxAge, c.ResultsMaxBytes)
	}
	c.Scope = string(sc)
	cs := set.byName[c.Name]
	if cs == nil {
		cs = &crawlState{}
		set.byName[c.Name] = cs
	}
	c.Pages, c.Done, c.Defined, c.State = cs.def.Pages, cs.def.Done, now, cs.def.State
	c.Queued, c.Running, c.Backoff, c.Failed, c.PagesPerSec = 0, 0, 0, 0, 0 // live figures: not kept
	cs.def, cs.defined = c, true
	if set.clustered() {
		set.c.SetBudget(c.Name, 0, 0) // counted here, charged on the cluster
	} else {
		set.c.SetBudget(c.Name, c.MaxPages, c.Pages)
	}
	if err := set.save(cs); err != nil {
		return admin.ActionResult{}, fmt.Errorf("define-crawl %s: %w", c.Name, err)
	}
	set.res.setRetention(set.byName) // results.go
	set.log.Info("crawl defined", "crawl", c.Name, "scope", c.Scope, "max_depth", c.MaxDepth, "max_pages", c.MaxPages, "pages", c.Pages,
		"results_max_age", c.ResultsMaxAge, "results_max_bytes", c.ResultsMaxBytes)
	set.adm.dirty = true
	return admin.ActionResult{Affected: 1}, nil
}

// save writes cs to the store, if there is one, and waits until it is
// durable (crawl actions are rare: the reactor waits for them).
func (set *crawlSet) save(cs *crawlState) error {
	if set.clustered() {
		return set.saveCluster(cs) // clustercrawls.go
	}
	if set.dur == nil {
		return nil
	}
	if set.dur.failed != nil {
		return fmt.Errorf("not recorded: the store failed: %w", set.dur.failed)
	}
	b := set.dur.st.NewBatch()
	v, _ := json.Marshal(&cs.def) // plain fields: cannot fail
	if err := b.PutCrawl(cs.def.Name, v); err != nil {
		return err
	}
	done := make(chan error, 1)
	set.dur.st.Apply(b, func(err error) { done <- err })
	if err := <-done; err != nil {
		return fmt.Errorf("not recorded: %w", err)
	}
	cs.dirty = false
	return nil
}

// action carries out pause, resume, cancel or requeue-failed for the
// one crawl the action names.
func (set *crawlSet) action(now time.Time, a admin.Action) (admin.ActionResult, error) {
	if a.Kind == admin.ActRequeueFailed {
		res := set.c.RequeueFailedOf(now, a.Crawler)
		if set.clustered() && res.Affected > 0 {
			set.cc.AddFailed(a.Crawler, -res.Affected)
		}
		return res, nil
	}
	var state string
	switch a.Kind {
	case admin.ActPause:
		state = admin.CrawlPaused
	case admin.ActResume:
		state = admin.CrawlRunning
	case admin.ActCancel:
		state = admin.CrawlCancelled
	default:
		return admin.ActionResult{}, fmt.Errorf("action %s for crawl %s: want pause, resume, cancel or requeue-failed", a.Kind, a.Crawler)
	}
	cs := set.byName[a.Crawler]
	if cs == nil {
		cs = &crawlState{def: admin.Crawl{Name: a.Crawler}}
		set.byName[a.Crawler] = cs
	}
	if cs.def.State == "" {
		cs.def.State = admin.CrawlRunning
	}
	if cs.def.State == state {
		return admin.ActionResult{}, nil
	}
	cs.def.State = state
	n := set.c.SetCrawlState(now, a.Crawler, crawlStates[state])
	if err := set.save(cs); err != nil {
		return admin.ActionResult{}, fmt.Errorf("%s crawl %s: %w", a.Kind, a.Crawler, err)
	}
	set.log.Info("crawl "+state, "crawl", a.Crawler, "jobs", n)
	set.adm.dirty = true
	return admin.ActionResult{Affected: max(n, 1)}, nil
}

// seedPayload gives a job of a defined crawl submitted without a payload
// the crawl's seed payload.
func (set *crawlSet) seedPayload(spec *coord.JobSpec) {
	if len(spec.Payload) > 0 || len(set.byName) == 0 {
		return
	}
	cs := set.byName[spec.Key.Crawler]
	if cs == nil || !cs.defined {
		return
	}
	p := crawl.JobPayload{Depth: 0, Seed: spec.Key.URL, Scope: cs.def.Scope, MaxDepth: cs.def.MaxDepth}
	spec.Payload, _ = json.Marshal(p) // plain fields: cannot fail
}

// countPages brings the definitions' page counts up to the coordinator's
// after a step's dispatches, and reports whether one changed.
func (set *crawlSet) countPages() (changed bool) {
	for name, cs := range set.byName {
		if used, _, ok := set.c.BudgetUsed(name); ok && used != cs.def.Pages {
			cs.def.Pages, cs.dirty = used, true
			changed = true
		}
	}
	return changed
}

// countDone counts the step's jobs finished ok in their crawls' Done, to
// be written in the step's batch (with the jobs' done state).
func (set *crawlSet) countDone(fs []broker.Finished) {
	if len(set.byName) == 0 || len(fs) == 0 || set.clustered() {
		return // with ClusterCrawls the cluster counts them (clustercrawls.go)
	}
	now := set.now()
	for i := range fs {
		if fs[i].Failed {
			continue
		}
		if cs := set.byName[fs[i].Key.Crawler]; cs != nil {
			cs.def.Done++
			cs.dirty = true
			cs.rate.add(now, 1)
		}
	}
}

// pending reports whether a page or done count changed since it was
// written.
func (set *crawlSet) pending() bool {
	for _, cs := range set.byName {
		if cs.dirty {
			return true
		}
	}
	return false
}

// into adds the changed page counts to the step's batch: they are
// durable with the dispatches that spent them.
func (set *crawlSet) into(b *store.Batch) {
	for name, cs := range set.byName {
		if !cs.dirty {
			continue
		}
		v, _ := json.Marshal(&cs.def)
		if err := b.PutCrawl(name, v); err != nil {
			return // recorded in the batch: Apply fails it as a whole
		}
		cs.dirty = false
	}
}

// query answers QUERY view crawls: the definitions by name, those
// whose name contains the filter text, with their jobs by state, their
// rate and their current state (admin.Crawl.CurrentState: a running crawl
// with nothing left to do is reported done; what is stored stays the
// operator's state).
func (set *crawlSet) query(q admin.Query) admin.Page {
	page := admin.Page{View: admin.ViewCrawls}
	now := set.now()
	paged, _ := set.c.Paged() // jobs in the store only are in no crawl's counts (paging.go)
	for _, cs := range set.byName {
		switch {
		case q.Filter != "" && !strings.Contains(cs.def.Name, q.Filter):
		case set.clustered():
			page.Crawls = append(page.Crawls, set.clusterRow(now, cs)) // clustercrawls.go
		default:
			c := cs.def
			n := set.c.CrawlJobs(c.Name)
			c.Queued, c.Running, c.Backoff, c.Failed = n.Queued, n.Dispatched, n.Backoff, n.Failed
			c.PagesPerSec = cs.rate.perSec(now)
			c.State = c.CurrentState(paged > 0)
			page.Crawls = append(page.Crawls, c)
		}
	}
	slices.SortFunc(page.Crawls, func(a, b admin.Crawl) int { return strings.Compare(a.Name, b.Name) })
	if q.Desc {
		slices.Reverse(page.Crawls)
	}
	page.Total = len(page.Crawls)
	lo := min(q.Offset, len(page.Crawls))
	hi := len(page.Crawls)
	if q.Limit > 0 {
		hi = min(hi, lo+q.Limit)
	}
	page.Crawls, page.Offset = page.Crawls[lo:hi], lo
	return page
}
