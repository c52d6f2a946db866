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

// clustered reports whether crawls are held for the cluster.
func (set *crawlSet) clustered() bool { return set.cc != nil }

// sync publishes this coordinator's jobs of each crawl and reads
// every crawl back: definitions and states others set are applied here,
// and the cluster's figures kept for view crawls, which answers from
// them (at most crawlSyncEvery old) without a round trip of its own.
func (set *crawlSet) sync(now time.Time) error {
	set.synced = now
	all, err := fetchCrawls(set.cc, set.jobs())
	if err != nil {
		return err
	}
	return set.apply(now, all)
}

// jobs are this coordinator's jobs of each crawl, for the cluster.
func (set *crawlSet) jobs() map[string]broker.CrawlJobs {
	if len(set.byName) == 0 {
		return nil
	}
	jobs := make(map[string]broker.CrawlJobs, len(set.byName))
	for name := range set.byName {
		jobs[name] = set.c.CrawlJobs(name)
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

// apply applies the crawls read from the cluster (sync).
func (set *crawlSet) apply(now time.Time, all []admin.Crawl) error {
	retention := false
	for _, c := range all {
		cs := set.byName[c.Name]
		if cs == nil {
			cs = &crawlState{}
			set.byName[c.Name] = cs
			set.c.SetBudget(c.Name, 0, 0) // counted here, charged on the cluster
		}
		st, ok := crawlStates[c.State]
		if !ok {
			return fmt.Errorf("crawl %q on the cluster: state %q, want running, paused or cancelled", c.Name, c.State)
		}
		if crawlStates[cs.def.State] != st { // set on another coordinator
			n := set.c.SetCrawlState(now, c.Name, st)
			set.log.Info("crawl "+c.State+" on the cluster", "crawl", c.Name, "jobs", n)
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
		set.res.setRetention(set.byName) // results.go
	}
	// Consoles are told CHANGED once a read: other coordinators' results,
	// events and crawl figures change with nothing here knowing.
	set.adm.dirty = true
	return nil
}

// syncEvery starts a sync of the crawls once per crawlSyncEvery
// (Run's step): its round trips are made off the reactor (clusterio.go),
// and the crawls read are applied at the step after they came, one sync
// at a time.
func (set *crawlSet) syncEvery(now time.Time) {
	if !set.clustered() || set.syncing || now.Sub(set.synced) < crawlSyncEvery {
		return
	}
	set.synced, set.syncing = now, true
	cc, jobs := set.cc, set.jobs()
	set.cl.post(func() func() {
		all, err := fetchCrawls(cc, jobs)
		return func() {
			set.syncing = false
			if err == nil {
				err = set.apply(set.now(), all)
			}
			if err != nil {
				set.log.Warn("crawls on the cluster", "err", err)
			}
		}
	})
}

// saveCluster stores a definition or state set here for the cluster.
func (set *crawlSet) saveCluster(cs *crawlState) error {
	if err := set.cc.SaveCrawl(cs.def); err != nil {
		return fmt.Errorf("not recorded: %w", err)
	}
	return nil
}

// clusterRow is view crawls' row of a crawl held for the cluster: its
// definition with the cluster's figures.
func (set *crawlSet) clusterRow(now time.Time, cs *crawlState) admin.Crawl {
	c := cs.def
	f := &cs.cluster
	c.Pages, c.Queued, c.Running, c.Backoff, c.Done, c.Failed = f.Pages, f.Queued, f.Running, f.Backoff, f.Done, f.Failed
	c.PagesPerSec = cs.rate.perSec(now)
	c.State = c.CurrentState(false)
	return c
}
