package cli

import (
	"time"

	"drover/config"
	"drover/coord/broker"
	"drover/crawl"
	"drover/crawl/job"
)

// politeness is the fleet's politeness policy held by the coordinator
// (issue 22): crawl.per_host and crawl.min_delay for every host, the
// config file's crawl.hosts rules before them, for the crawl handler's
// jobs (processor fetch; an --exec queue of other processors is not held). A crawl.min_delay left at
// its default spares local hosts (a local site is the user's own), as
// the default did on workers; set, it applies to every host, loopback
// included. defaultDelay, when not 0, replaces the default delay (the
// demo's own, for its local site too).
func politeness(c *config.Config, defaultDelay time.Duration) broker.Politeness {
	// ShareRobots: a host's robots.txt is fetched by one worker for the
	// fleet (PROTOCOL.md §6.18).
	// Since: a coordinator restarted just after a dispatch does not hit
	// the host again sooner than its interval (the clock is not persisted).
	p := broker.Politeness{Default: broker.Limits{PerHost: c.Crawl.PerHost, MinDelay: c.Crawl.MinDelay}, Processor: job.Processor,
		ShareRobots: true, Since: time.Now()}
	for _, r := range c.CrawlHosts {
		p.Rules = append(p.Rules, broker.HostRule{Pattern: r.Pattern, Limits: broker.Limits{PerHost: r.PerHost, MinDelay: r.MinDelay}})
	}
	if c.Source("crawl.min_delay").Kind == config.FromDefault {
		if defaultDelay != 0 {
			p.Default.MinDelay = defaultDelay
		} else {
			p.Local, p.IsLocal = &broker.Limits{PerHost: c.Crawl.PerHost}, crawl.IsLocalHost
		}
	}
	return p
}

// localCaps sets a worker's own per-host limits: only what the user set
// (crawl.per_host, crawl.min_delay), as a cap below the fleet's; left at
// their defaults, the worker sets none and the coordinator's hold.
func localCaps(c *config.Config) (perHost int, minDelay time.Duration) {
	if c.Source("crawl.per_host").Kind != config.FromDefault {
		perHost = c.Crawl.PerHost
	}
	if c.Source("crawl.min_delay").Kind != config.FromDefault {
		minDelay = c.Crawl.MinDelay
	}
	return perHost, minDelay
}
