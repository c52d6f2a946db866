package admin

// The states of a crawl (Crawl.State). An operator sets running (resume),
// paused and cancelled, and the coordinator stores them; a running crawl
// is reported, by its jobs now, as running, done or idle (CurrentState),
// but stored as running.
const (
	CrawlRunning   = "running"   // some of its jobs are queued, running or backing off
	CrawlPaused    = "paused"    // an operator paused it: its jobs stay queued
	CrawlCancelled = "cancelled" // an operator cancelled it: its jobs fail as they come
	CrawlDone      = "done"      // nothing of it is queued, running or backing off, and some of it finished
	CrawlIdle      = "idle"      // it has had no job yet (defined, no seed submitted)
)

// CurrentState is the state to report for c, the one rule for it: paused
// or cancelled when an operator set so; else running while any of its jobs
// is queued, running or backing off, done when none is and some job of it
// finished or was dispatched (Done, Failed, Pages), idle when it has had
// none. uncounted says that queued jobs may exist that the counts do not
// hold (paged out to the store): then a crawl is not known to be done or
// idle, and is running. Submitting to a done crawl makes it running again.
// The coordinator answers QUERY view crawls with it in State, which the
// console and drover status show as it is.
func (c *Crawl) CurrentState(uncounted bool) string {
	switch c.State {
	case CrawlPaused, CrawlCancelled:
		return c.State
	}
	switch {
	case uncounted || c.Queued+c.Running+c.Backoff > 0:
		return CrawlRunning
	case c.Done+c.Failed+c.Pages > 0:
		return CrawlDone
	}
	return CrawlIdle
}
