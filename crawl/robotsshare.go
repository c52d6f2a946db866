package crawl

import "time"

// A fleet of workers shares robots.txt files (docs/PROTOCOL.md §6.18):
// the worker that fetched one reports it (Page.Robots), and the others
// use the coordinator's copy (UseRobots) instead of fetching it again.

// RobotsCopy is one origin's robots.txt as a fleet shares it.
type RobotsCopy struct {
	// Origin is scheme://host[:port], as Fetch keys its cache.
	Origin string
	// Body is the file as fetched (at most 512 KiB); empty allows
	// everything (the site answered 4xx).
	Body []byte
	// TTL is how long from now the copy may be used.
	TTL time.Duration
	// CrawlDelay is the Crawl-delay the file gives this Fetcher's product
	// token (0: none), not capped.
	CrawlDelay time.Duration
}

// report returns the copy of e (origin's entry) to report to the fleet,
// once: only for an entry this Fetcher fetched itself with a shareable
// answer, to the first fetch that uses it.
func (f *Fetcher) report(origin string, e *robotsEntry) *RobotsCopy {
	if !e.share {
		return nil
	}
	f.mu.Lock()
	first := !e.reported
	e.reported = true
	f.mu.Unlock()
	if !first {
		return nil
	}
	ttl := e.expires.Sub(f.clock.Now())
	if ttl <= 0 {
		return nil
	}
	return &RobotsCopy{Origin: origin, Body: e.body, TTL: ttl, CrawlDelay: e.rules.CrawlDelay}
}

// UseRobots makes the Fetcher use a robots.txt another member of the
// fleet fetched, parsed for its own product token, for c.TTL (at most
// Config.RobotsTTL) instead of fetching the file. A copy with no time left
// is ignored.
func (f *Fetcher) UseRobots(c RobotsCopy) {
	ttl := min(c.TTL, f.cfg.RobotsTTL)
	if ttl <= 0 || c.Origin == "" {
		return
	}
	e := &robotsEntry{rules: ParseRobots(c.Body, f.token), expires: f.clock.Now().Add(ttl)}
	f.mu.Lock()
	if _, ok := f.robots[c.Origin]; !ok && len(f.robots) >= f.pruneRobotsAt {
		f.pruneRobots()
	}
	f.robots[c.Origin] = e
	f.mu.Unlock()
}
