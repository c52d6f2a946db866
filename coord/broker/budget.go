package broker

import (
	"strconv"
	"time"
)

// Crawls (issue 23): a crawl, named by the crawler part of its keys, may
// have a page budget and may be paused or cancelled on its own.
//
//   - Budget: at most limit of its jobs are ever dispatched (a job counts
//     once, at its first dispatch; retries of it do not count again). A job
//     that would be dispatched past the budget is not: it fails at once with
//     Finished.Skipped "budget", so it is visible (failed, requeueable once
//     the budget grows) and its key is settled.
//   - Pause: a job of a paused crawl that reaches the head of its queue is
//     parked (still queued, out of the dispatch order) until the crawl is
//     resumed; other crawls' jobs are dispatched meanwhile.
//   - Cancel: its queued, parked and backing-off jobs fail at once with
//     Finished.Skipped "cancelled", and so does every later job of it until
//     the crawl is resumed; running jobs finish.

// budget is one crawler's page budget and state.
type budget struct {
	limit     int // 0: none
	used      int // first dispatches so far
	paused    bool
	cancelled bool
	parked    jobList // jobs of a paused crawl taken from their queues
	count     [nStates]int
}

// CrawlJobs counts one crawl's jobs by state (Broker.CrawlJobs).
type CrawlJobs struct {
	Queued, Dispatched, Backoff, Failed int
}

// CrawlState is a crawl's state for SetCrawlState.
type CrawlState uint8

// The crawl states.
const (
	CrawlRunning   CrawlState = iota // dispatched as usual
	CrawlPaused                      // its jobs wait
	CrawlCancelled                   // its jobs fail as cancelled
)

func (b *Broker) budgetOf(crawler string) *budget {
	if b.budgets == nil {
		b.budgets = make(map[string]*budget)
	}
	bg := b.budgets[crawler]
	if bg == nil {
		bg = &budget{}
		b.budgets[crawler] = bg
		// From now on countCrawl keeps the counts: start from the jobs
		// kept (once per crawl name).
		for id := JobID(1); int(id) <= b.jobs.n; id++ {
			if j := b.jobs.get(id); j != nil && b.crawler(j) == crawler {
				bg.count[j.state]++
			}
		}
	}
	return bg
}

// countCrawl moves a job of a crawl the broker knows (SetBudget,
// SetCrawlState) from state old to st in its crawl's counts; 0 is no
// state.
func (b *Broker) countCrawl(j *job, old, st JobState) {
	if len(b.budgets) == 0 {
		return
	}
	bg := b.budgets[b.crawler(j)]
	if bg == nil {
		return
	}
	bg.count[old]--
	bg.count[st]++
}

// CrawlJobs counts the jobs of crawler by state, for a crawler SetBudget
// or SetCrawlState named (others: zero). Done jobs are not counted here:
// their records are forgotten after a while (Config.DoneRetention).
func (b *Broker) CrawlJobs(crawler string) CrawlJobs {
	bg := b.budgets[crawler]
	if bg == nil {
		return CrawlJobs{}
	}
	return CrawlJobs{Queued: bg.count[Queued], Dispatched: bg.count[Dispatched], Backoff: bg.count[Backoff], Failed: bg.count[Failed]}
}

// SetBudget gives crawler a budget of limit pages, used of which are
// spent (a restart restores the count); limit 0 removes the budget but
// keeps counting.
func (b *Broker) SetBudget(crawler string, limit, used int) {
	bg := b.budgetOf(crawler)
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

// SetCrawlState pauses, cancels or resumes crawler and returns how many of
// its jobs that changed: resumed from parking, or failed as cancelled.
func (b *Broker) SetCrawlState(now time.Time, crawler string, st CrawlState) int {
	bg := b.budgetOf(crawler)
	t := ns(now)
	n := 0
	switch st {
	case CrawlPaused:
		bg.paused, bg.cancelled = true, false
	case CrawlRunning:
		bg.paused, bg.cancelled = false, false
		for bg.parked.head != nil {
			j := bg.parked.head
			bg.parked.remove(&b.jobs, j)
			b.place(j, t, now)
			n++
		}
	case CrawlCancelled:
		bg.paused, bg.cancelled = false, true
		for bg.parked.head != nil {
			j := bg.parked.head
			bg.parked.remove(&b.jobs, j)
			b.skip(j, t, now, "cancelled")
			n++
		}
		for id := JobID(1); int(id) <= b.jobs.n; id++ {
			j := b.jobs.get(id)
			if j == nil || b.crawler(j) != crawler {
				continue
			}
			switch j.state {
			case Queued:
				b.unqueue(j)
			case Backoff:
				b.unwait(j)
			default:
				continue
			}
			b.skip(j, t, now, "cancelled")
			n++
		}
	}
	return n
}

// admit decides, at the dispatch of a job taken from its queue, whether
// its crawl lets it run, counting its first dispatch against the budget.
// A job it refuses is parked or failed.
func (b *Broker) admit(j *job, t int64, now time.Time) bool {
	if len(b.budgets) == 0 {
		return true
	}
	bg := b.budgets[b.crawler(j)]
	switch {
	case bg == nil:
		return true
	case bg.cancelled:
		b.skip(j, t, now, "cancelled")
		return false
	case bg.paused:
		bg.parked.push(j)
		return false
	case b.jobAttempts(j) > 0:
		return true
	case bg.limit > 0 && bg.used >= bg.limit:
		b.skip(j, t, now, "budget")
		return false
	}
	bg.used++
	return true
}

// skip fails a job (in no list) that its crawl does not let run.
func (b *Broker) skip(j *job, t int64, now time.Time, why string) {
	cr := b.crawler(j)
	msg := "cancelled: crawl " + cr + " was cancelled"
	if why == "budget" {
		msg = "budget: crawl " + cr + " has dispatched its " + strconv.Itoa(b.budgets[cr].limit) + " pages"
	}
	b.fail(j, t, now, msg)
	b.finished[len(b.finished)-1].Skipped = why
}

// Refuse adds a job whose crawl's page budget, held outside this broker
// (several coordinators sharing one), has no page left for it: the job
// fails at once as a job dispatched past the broker's own budget would,
// with Finished.Skipped "budget" (visible, requeueable, its key settled).
// limit is the budget, for the error.
func (b *Broker) Refuse(now time.Time, spec Spec, limit int) JobID {
	jid := b.Submit(now, spec)
	j := b.jobs.get(jid)
	switch j.state {
	case Queued:
		b.unqueue(j)
	case Backoff:
		b.unwait(j)
	}
	b.fail(j, ns(now), now, "budget: crawl "+spec.Key.Crawler+" has dispatched its "+strconv.Itoa(limit)+" pages")
	b.finished[len(b.finished)-1].Skipped = "budget"
	return jid
}
