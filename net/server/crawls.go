package server

import (
	"encoding/json"
	"fmt"
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

// crawlState is one crawl: defined (define-crawl), or only paused or
// cancelled by name.
type crawlState struct {
	def     admin.Crawl
	saved   int  // def.Pages as last written to the store
	defined bool // by define-crawl: its seeds get the crawl payload
}

// The crawl states of admin.Crawl.State.
var crawlStates = map[string]broker.CrawlState{
	"": broker.CrawlRunning, "running": broker.CrawlRunning, "paused": broker.CrawlPaused, "cancelled": broker.CrawlCancelled,
}

// restoreCrawls reads the definitions from the store and gives the broker
// their budgets and counts.
func (s *Server) restoreCrawls() error {
	s.crawls = make(map[string]*crawlState)
	if s.dur == nil {
		return nil
	}
	return s.dur.st.ReadCrawls(func(name string, v []byte) error {
		var c admin.Crawl
		if err := json.Unmarshal(v, &c); err != nil || c.Name != name {
			return fmt.Errorf("crawl definition %q in the store: %q does not decode to it (%v)", name, v, err)
		}
		st, ok := crawlStates[c.State]
		if !ok {
			return fmt.Errorf("crawl definition %q in the store: state %q, want running, paused or cancelled", name, c.State)
		}
		s.crawls[name] = &crawlState{def: c, saved: c.Pages, defined: c.Scope != ""}
		s.c.SetBudget(name, c.MaxPages, c.Pages)
		if st != broker.CrawlRunning {
			s.c.SetCrawlState(s.now(), name, st)
		}
		return nil
	})
}

// defineCrawl checks and stores a definition; with a store, it returns
// once the definition is durable.
func (s *Server) defineCrawl(now time.Time, c admin.Crawl) (admin.ActionResult, error) {
	sc, err := crawl.ParseScope(c.Scope)
	switch {
	case err != nil:
		return admin.ActionResult{}, fmt.Errorf("define-crawl %s: %w", c.Name, err)
	case c.MaxDepth < 0 || c.MaxPages < 0:
		return admin.ActionResult{}, fmt.Errorf("define-crawl %s: max_depth %d, max_pages %d: want 0 (no limit) or more", c.Name, c.MaxDepth, c.MaxPages)
	}
	c.Scope = string(sc)
	cs := s.crawls[c.Name]
	if cs == nil {
		cs = &crawlState{}
		s.crawls[c.Name] = cs
	}
	c.Pages, c.Defined, c.State = cs.def.Pages, now, cs.def.State
	cs.def, cs.defined = c, true
	s.c.SetBudget(c.Name, c.MaxPages, c.Pages)
	if err := s.saveCrawl(cs); err != nil {
		return admin.ActionResult{}, fmt.Errorf("define-crawl %s: %w", c.Name, err)
	}
	s.log.Info("crawl defined", "crawl", c.Name, "scope", c.Scope, "max_depth", c.MaxDepth, "max_pages", c.MaxPages, "pages", c.Pages)
	s.dirty = true
	return admin.ActionResult{Affected: 1}, nil
}

// saveCrawl writes cs to the store, if there is one, and waits until it is
// durable (crawl actions are rare: the reactor waits for them).
func (s *Server) saveCrawl(cs *crawlState) error {
	if s.dur == nil {
		return nil
	}
	if s.dur.failed != nil {
		return fmt.Errorf("not recorded: the store failed: %w", s.dur.failed)
	}
	b := s.dur.st.NewBatch()
	v, _ := json.Marshal(&cs.def) // plain fields: cannot fail
	if err := b.PutCrawl(cs.def.Name, v); err != nil {
		return err
	}
	done := make(chan error, 1)
	s.dur.st.Apply(b, func(err error) { done <- err })
	if err := <-done; err != nil {
		return fmt.Errorf("not recorded: %w", err)
	}
	cs.saved = cs.def.Pages
	return nil
}

// crawlAction carries out pause, resume, cancel or requeue-failed for the
// one crawl the action names.
func (s *Server) crawlAction(now time.Time, a admin.Action) (admin.ActionResult, error) {
	if a.Kind == admin.ActRequeueFailed {
		return s.c.RequeueFailedOf(now, a.Crawler), nil
	}
	var state string
	switch a.Kind {
	case admin.ActPause:
		state = "paused"
	case admin.ActResume:
		state = "running"
	case admin.ActCancel:
		state = "cancelled"
	default:
		return admin.ActionResult{}, fmt.Errorf("action %s for crawl %s: want pause, resume, cancel or requeue-failed", a.Kind, a.Crawler)
	}
	cs := s.crawls[a.Crawler]
	if cs == nil {
		cs = &crawlState{def: admin.Crawl{Name: a.Crawler}}
		s.crawls[a.Crawler] = cs
	}
	if cs.def.State == "" {
		cs.def.State = "running"
	}
	if cs.def.State == state {
		return admin.ActionResult{}, nil
	}
	cs.def.State = state
	n := s.c.SetCrawlState(now, a.Crawler, crawlStates[state])
	if err := s.saveCrawl(cs); err != nil {
		return admin.ActionResult{}, fmt.Errorf("%s crawl %s: %w", a.Kind, a.Crawler, err)
	}
	s.log.Info("crawl "+state, "crawl", a.Crawler, "jobs", n)
	s.dirty = true
	return admin.ActionResult{Affected: max(n, 1)}, nil
}

// seedPayload gives a job of a defined crawl submitted without a payload
// the crawl's seed payload.
func (s *Server) seedPayload(spec *coord.JobSpec) {
	if len(spec.Payload) > 0 || len(s.crawls) == 0 {
		return
	}
	cs := s.crawls[spec.Key.Crawler]
	if cs == nil || !cs.defined {
		return
	}
	p := crawl.JobPayload{Depth: 0, Seed: spec.Key.URL, Scope: cs.def.Scope, MaxDepth: cs.def.MaxDepth}
	spec.Payload, _ = json.Marshal(p) // plain fields: cannot fail
}

// countPages brings the definitions' page counts up to the broker's after
// a step's dispatches.
func (s *Server) countPages() {
	for name, cs := range s.crawls {
		if used, _, ok := s.c.BudgetUsed(name); ok && used != cs.def.Pages {
			cs.def.Pages = used
			s.dirty = true
		}
	}
}

// pendingCrawls reports whether a page count changed since it was written.
func (s *Server) pendingCrawls() bool {
	for _, cs := range s.crawls {
		if cs.def.Pages != cs.saved {
			return true
		}
	}
	return false
}

// crawlsInto adds the changed page counts to the step's batch: they are
// durable with the dispatches that spent them.
func (s *Server) crawlsInto(b *store.Batch) {
	for name, cs := range s.crawls {
		if cs.def.Pages == cs.saved {
			continue
		}
		v, _ := json.Marshal(&cs.def)
		if err := b.PutCrawl(name, v); err != nil {
			return // recorded in the batch: Apply fails it as a whole
		}
		cs.saved = cs.def.Pages
	}
}

// queryCrawls answers QUERY view crawls: the definitions by name, those
// whose name contains the filter text.
func (s *Server) queryCrawls(q admin.Query) admin.Page {
	page := admin.Page{View: admin.ViewCrawls}
	for _, cs := range s.crawls {
		if q.Filter == "" || strings.Contains(cs.def.Name, q.Filter) {
			page.Crawls = append(page.Crawls, cs.def)
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
