package server

import (
	"fmt"
	"time"

	"drover/admin"
	"drover/coord/broker"
)

// Crawls held for several coordinators (Options.ClusterCrawls, the Redis
// Cluster store): the definitions and states are the cluster's, read back
// about once a second, so a crawl defined, paused or cancelled on one
// coordinator applies on every one; its page budget is charged when a
// coordinator claims a job from the shared queue (coord.SharedBudgets),
// not by this coordinator's broker, which only counts the crawl's jobs;
// and view crawls shows the cluster's figures, the same on every
// coordinator.

// ClusterCrawls holds crawls for every coordinator sharing a store
// (store/redis.CrawlQueue). The reactor calls it, but for ReadCrawls and
// PublishCrawlJobs, which the cluster I/O goroutine calls (clusterio.go):
// its calls may do I/O.
type ClusterCrawls interface {
	// SaveCrawl stores a crawl's definition and state.
	SaveCrawl(c admin.Crawl) error
	// ReadCrawls reads every crawl with the cluster's figures (Pages,
	// Queued, Running, Backoff, Done, Failed).
	ReadCrawls() ([]admin.Crawl, error)
	// PublishCrawlJobs writes this coordinator's jobs of each crawl by
	// state, for the others' figures.
	PublishCrawlJobs(jobs map[string]broker.CrawlJobs) error
	// AddFailed adds n (negative: takes back) to a crawl's failed jobs.
	AddFailed(crawler string, n int)
}

// crawlSyncEvery is how often the reactor publishes its crawl jobs and
// reads the cluster's crawls back.
const crawlSyncEvery = time.Second

// clusterCrawls reports whether crawls are held for the cluster.
func (s *Server) clusterCrawls() bool { return s.opts.ClusterCrawls != nil }

// syncCrawls publishes this coordinator's jobs of each crawl and reads
// every crawl back: definitions and states others set are applied here,
// and the cluster's figures kept for view crawls, which answers from
// them (at most crawlSyncEvery old) without a round trip of its own.
func (s *Server) syncCrawls(now time.Time) error {
	s.cl.crawlSynced = now
	all, err := fetchCrawls(s.opts.ClusterCrawls, s.crawlJobs())
	if err != nil {
		return err
	}
	return s.applyCrawls(now, all)
}

// crawlJobs are this coordinator's jobs of each crawl, for the cluster.
func (s *Server) crawlJobs() map[string]broker.CrawlJobs {
	if len(s.crawls) == 0 {
		return nil
	}
	jobs := make(map[string]broker.CrawlJobs, len(s.crawls))
	for name := range s.crawls {
		jobs[name] = s.c.CrawlJobs(name)
	}
	return jobs
}

// fetchCrawls publishes jobs (if any) and reads every crawl back: the
// round trips of a sync, which the cluster I/O goroutine makes.
func fetchCrawls(cc ClusterCrawls, jobs map[string]broker.CrawlJobs) ([]admin.Crawl, error) {
	if len(jobs) > 0 {
		if err := cc.PublishCrawlJobs(jobs); err != nil {
			return nil, err
		}
	}
	return cc.ReadCrawls()
}

// applyCrawls applies the crawls read from the cluster (syncCrawls).
func (s *Server) applyCrawls(now time.Time, all []admin.Crawl) error {
	retention := false
	for _, c := range all {
		cs := s.crawls[c.Name]
		if cs == nil {
			cs = &crawlState{}
			s.crawls[c.Name] = cs
			s.c.SetBudget(c.Name, 0, 0) // counted here, charged on the cluster
		}
		st, ok := crawlStates[c.State]
		if !ok {
			return fmt.Errorf("crawl %q on the cluster: state %q, want running, paused or cancelled", c.Name, c.State)
		}
		if crawlStates[cs.def.State] != st { // set on another coordinator
			n := s.c.SetCrawlState(now, c.Name, st)
			s.log.Info("crawl "+c.State+" on the cluster", "crawl", c.Name, "jobs", n)
		}
		if cs.def.ResultsMaxAge != c.ResultsMaxAge || cs.def.ResultsMaxBytes != c.ResultsMaxBytes {
			retention = true
		}
		if d := c.Done - cs.cluster.Done; cs.cluster.Name != "" && d > 0 {
			cs.rate.add(now, d) // done since the last read (the first read's are no rate)
		}
		cs.cluster = c
		c.Pages, c.Queued, c.Running, c.Backoff, c.Done, c.Failed = 0, 0, 0, 0, 0, 0
		cs.def, cs.defined = c, c.Scope != ""
	}
	if retention {
		s.res.setRetention(s.crawls) // results.go
	}
	// Consoles are told CHANGED once a read: other coordinators' results,
	// events and crawl figures change with nothing here knowing.
	s.adm.dirty = true
	return nil
}

// syncCrawlsEvery starts a sync of the crawls once per crawlSyncEvery
// (Run's step): its round trips are made off the reactor (clusterio.go),
// and the crawls read are applied at the step after they came, one sync
// at a time.
func (s *Server) syncCrawlsEvery(now time.Time) {
	if !s.clusterCrawls() || s.cl.crawlSyncing || now.Sub(s.cl.crawlSynced) < crawlSyncEvery {
		return
	}
	s.cl.crawlSynced, s.cl.crawlSyncing = now, true
	cc, jobs := s.opts.ClusterCrawls, s.crawlJobs()
	s.cl.post(func() func() {
		all, err := fetchCrawls(cc, jobs)
		return func() {
			s.cl.crawlSyncing = false
			if err == nil {
				err = s.applyCrawls(s.now(), all)
			}
			if err != nil {
				s.log.Warn("crawls on the cluster", "err", err)
			}
		}
	})
}

// saveClusterCrawl stores a definition or state set here for the cluster.
func (s *Server) saveClusterCrawl(cs *crawlState) error {
	if err := s.opts.ClusterCrawls.SaveCrawl(cs.def); err != nil {
		return fmt.Errorf("not recorded: %w", err)
	}
	return nil
}

// clusterRow is view crawls' row of a crawl held for the cluster: its
// definition with the cluster's figures.
func (s *Server) clusterRow(now time.Time, cs *crawlState) admin.Crawl {
	c := cs.def
	f := &cs.cluster
	c.Pages, c.Queued, c.Running, c.Backoff, c.Done, c.Failed = f.Pages, f.Queued, f.Running, f.Backoff, f.Done, f.Failed
	c.PagesPerSec = cs.rate.perSec(now)
	c.State = c.CurrentState(false)
	return c
}
