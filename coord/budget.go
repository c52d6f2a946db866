package coord

import (
	"time"

	"drover/admin"
	"drover/coord/broker"
)

// SetBudget gives the crawl named crawler a page budget: at most limit of
// its jobs are ever dispatched, used already were (restored from the
// store); limit 0 removes the limit but keeps counting. Jobs past it fail
// as budget (broker.Finished.Budget).
func (c *Coordinator) SetBudget(crawler string, limit, used int) {
	c.brk.SetBudget(crawler, limit, used)
}

// BudgetUsed reports the pages crawler dispatched and its limit; ok is
// false when SetBudget never named it.
func (c *Coordinator) BudgetUsed(crawler string) (used, limit int, ok bool) {
	return c.brk.BudgetUsed(crawler)
}

// CrawlJobs counts the jobs of a crawl SetBudget or SetCrawlState named,
// by state (broker.CrawlJobs).
func (c *Coordinator) CrawlJobs(crawler string) broker.CrawlJobs {
	return c.brk.CrawlJobs(crawler)
}

// SetCrawlState pauses, cancels or resumes one crawl (broker.SetCrawlState)
// and returns how many of its jobs that moved.
func (c *Coordinator) SetCrawlState(now time.Time, crawler string, st broker.CrawlState) int {
	return c.brk.SetCrawlState(now, crawler, st)
}

// RequeueFailedOf is ACTION requeue-failed for the jobs of one crawler:
// each goes back to the queue, its key back to queued in the ledger.
func (c *Coordinator) RequeueFailedOf(now time.Time, crawler string) admin.ActionResult {
	var res admin.ActionResult
	for skip := 0; ; {
		page := c.brk.Jobs(admin.Query{View: admin.ViewJobs, Filter: "state=failed", Offset: skip, Limit: MaxWindow})
		if len(page.Jobs) == 0 {
			return res
		}
		for _, row := range page.Jobs {
			if row.Crawler != crawler {
				skip++
				continue
			}
			if err := c.requeue(now, broker.JobID(row.JobID)); err != nil {
				res.Errors = append(res.Errors, err.Error())
				skip++
				continue
			}
			res.Affected++
		}
	}
}
