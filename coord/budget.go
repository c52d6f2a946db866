package coord

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
