package admin

import "testing"

// TestCrawlCurrentState: the operator's pause and cancel win; else the
// crawl's jobs now say running, done or idle, whatever State said before;
// with jobs the counts may miss, a crawl is running.
func TestCrawlCurrentState(t *testing.T) {
	for _, tc := range []struct {
		c         Crawl
		uncounted bool
		want      string
	}{
		{Crawl{}, false, CrawlIdle},
		{Crawl{State: CrawlRunning}, false, CrawlIdle},
		{Crawl{State: CrawlRunning, Queued: 1}, false, CrawlRunning},
		{Crawl{Running: 1, Done: 4}, false, CrawlRunning},
		{Crawl{Backoff: 2, Failed: 1}, false, CrawlRunning},
		{Crawl{State: CrawlRunning, Done: 3}, false, CrawlDone},
		{Crawl{Failed: 3}, false, CrawlDone},
		{Crawl{Pages: 1}, false, CrawlDone},
		{Crawl{State: CrawlDone, Queued: 1}, false, CrawlRunning}, // submitted to again
		{Crawl{State: CrawlPaused, Done: 3}, false, CrawlPaused},
		{Crawl{State: CrawlPaused, Queued: 2}, false, CrawlPaused},
		{Crawl{State: CrawlCancelled, Failed: 2}, false, CrawlCancelled},
		{Crawl{State: CrawlCancelled, Running: 1}, false, CrawlCancelled},
		{Crawl{Done: 3}, true, CrawlRunning}, // its jobs may be in the store only
		{Crawl{}, true, CrawlRunning},
		{Crawl{State: CrawlPaused}, true, CrawlPaused},
	} {
		if got := tc.c.CurrentState(tc.uncounted); got != tc.want {
			t.Errorf("%+v, uncounted %v: CurrentState %q, want %q", tc.c, tc.uncounted, got, tc.want)
		}
	}
}
