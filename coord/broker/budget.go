package broker

import (
	"strconv"
	"time"
)

// Page budgets (issue 23): a crawl, named by the crawler part of its keys,
// may have a budget of pages: at most that many of its jobs are ever
// dispatched (a job counts once, at its first dispatch; retries of it do
// not count again). A job that would be dispatched past the budget is not:
// it fails at once with Finished.Budget set, so it is visible (failed,
// requeueable once the budget grows) and its key is settled.

// budget is one crawler's page budget.
type budget struct {
	limit int // 0: none
	used  int // first dispatches so far
}

// SetBudget gives crawler a budget of limit pages, used of which are
// spent (a restart restores the count); limit 0 removes the budget but
// keeps counting.
func (b *Broker) SetBudget(crawler string, limit, used int) {
	if b.budgets == nil {
		b.budgets = make(map[string]*budget)
	}
	bg := b.budgets[crawler]
	if bg == nil {
		bg = &budget{}
		b.budgets[crawler] = bg
	}
	bg.limit, bg.used = max(limit, 0), max(used, bg.used, 0)
}

// BudgetUsed reports how many jobs of crawler were dispatched since
// SetBudget named it, and its limit; ok is false for a crawler without
// one.
func (b *Broker) BudgetUsed(crawler string) (used, limit int, ok bool) {
	bg := b.budgets[crawler]
	if bg == nil {
		return 0, 0, false
	}
	return bg.used, bg.limit, true
}

// spend counts j's first dispatch against its crawler's budget and
// reports whether the budget allowed it.
func (b *Broker) spend(j *job) bool {
	if len(b.budgets) == 0 || j.attempts > 0 {
		return true
	}
	bg := b.budgets[j.spec.Key.Crawler]
	if bg == nil {
		return true
	}
	if bg.limit > 0 && bg.used >= bg.limit {
		return false
	}
	bg.used++
	return true
}

// skipBudget fails a queued job (already taken from its queue) that its
// crawl's budget does not allow.
func (b *Broker) skipBudget(j *job, t int64, now time.Time) {
	_, limit, _ := b.BudgetUsed(j.spec.Key.Crawler)
	b.fail(j, t, now, "budget: crawl "+j.spec.Key.Crawler+" has dispatched its "+strconv.Itoa(limit)+" pages")
	b.finished[len(b.finished)-1].Budget = true
}
