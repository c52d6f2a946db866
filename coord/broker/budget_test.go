package broker

import (
	"strconv"
	"testing"
	"time"

	"drover/coord/id"
)

// oneWorker returns a broker without jitter and one worker (session 1,
// "w") of the given slots (0: the default).
func oneWorker(t *testing.T, slots int) *Broker {
	t.Helper()
	b, err := New(Config{Jitter: -1, RetryJitter: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Register(epoch, 1, WorkerInfo{ID: "w", Slots: slots}, nil); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBudget: a crawl with a budget of 3 pages dispatches 3 of its 5 jobs
// (a retry does not count again) and fails the other 2 as budget; another
// crawler is not limited.
func TestBudget(t *testing.T) {
	b := oneWorker(t, 10)
	now := epoch
	b.SetBudget("news", 3, 1) // one page spent before a restart
	for i := range 4 {
		b.Submit(now, Spec{Key: id.Key{Crawler: "news", URL: "http://h/" + strconv.Itoa(i)}, Host: "h"})
	}
	b.Submit(now, Spec{Key: id.Key{Crawler: "other", URL: "http://h/x"}, Host: "h"})
	as := b.Dispatch(now, nil)
	if len(as) != 3 {
		t.Fatalf("%d dispatched, want 3: 2 of news (budget 3, 1 spent) and other's", len(as))
	}
	fin := b.TakeFinished(nil)
	if len(fin) != 2 || fin[0].Skipped != "budget" || fin[1].Skipped != "budget" || !fin[0].Failed {
		t.Fatalf("finished %+v: want 2 budget failures", fin)
	}
	if used, limit, ok := b.BudgetUsed("news"); used != 3 || limit != 3 || !ok {
		t.Fatalf("BudgetUsed = %d, %d, %v; want 3 of 3", used, limit, ok)
	}
	// A retry of a dispatched job is not a new page.
	if err := result(b, now, 1, as[0].Job, Outcome{Kind: Internal}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second) // its retry delay
	b.Tick(now)
	if again := b.Dispatch(now, nil); len(again) != 1 || again[0].Job != as[0].Job {
		t.Fatalf("retry: %+v, want job %d again", again, as[0].Job)
	}
	if used, _, _ := b.BudgetUsed("news"); used != 3 {
		t.Fatalf("used %d after a retry, want still 3", used)
	}
	if _, _, ok := b.BudgetUsed("other"); ok {
		t.Fatal("other has a budget, want none")
	}
}

// TestCrawlPauseCancel: a paused crawl's jobs wait while another crawl's
// run; resume dispatches them; cancel fails the queued ones as cancelled,
// and a cancelled job can be requeued once the crawl is resumed.
func TestCrawlPauseCancel(t *testing.T) {
	b := oneWorker(t, 2)
	now := epoch
	b.SetCrawlState(now, "a", CrawlPaused)
	for i := range 3 {
		b.Submit(now, Spec{Key: id.Key{Crawler: "a", URL: "http://h/a" + strconv.Itoa(i)}, Host: "h"})
	}
	b.Submit(now, Spec{Key: id.Key{Crawler: "b", URL: "http://h/b"}, Host: "h"})
	as := b.Dispatch(now, nil)
	if len(as) != 1 || as[0].Job != 4 {
		t.Fatalf("dispatched %+v while a is paused, want only b's job 4", as)
	}
	if _, err := b.Result(now, 1, Run{Job: 4, Attempt: as[0].Attempt}, Outcome{Kind: OK}); err != nil {
		t.Fatal(err)
	}
	if n := b.SetCrawlState(now, "a", CrawlRunning); n != 3 {
		t.Fatalf("resume moved %d jobs, want 3", n)
	}
	as = b.Dispatch(now, nil)
	if len(as) != 2 || as[0].Job != 1 || as[1].Job != 2 {
		t.Fatalf("after resume: %+v, want jobs 1 and 2 in order", as)
	}
	if n := b.SetCrawlState(now, "a", CrawlCancelled); n != 1 {
		t.Fatalf("cancel failed %d jobs, want 1 (job 3 queued; 1 and 2 run on)", n)
	}
	fin := b.TakeFinished(nil)
	if len(fin) != 2 || fin[1].Job != 3 || fin[1].Skipped != "cancelled" {
		t.Fatalf("finished %+v: want b's job done and job 3 cancelled", fin)
	}
	b.Submit(now, Spec{Key: id.Key{Crawler: "a", URL: "http://h/a9"}, Host: "h"})
	if _, err := b.Result(now, 1, Run{Job: 1, Attempt: 1}, Outcome{Kind: OK}); err != nil {
		t.Fatal(err)
	}
	if as := b.Dispatch(now, nil); len(as) != 0 {
		t.Fatalf("dispatched %+v for a cancelled crawl, want none", as)
	}
	b.SetCrawlState(now, "a", CrawlRunning)
	if err := b.Requeue(now, 3); err != nil {
		t.Fatal(err)
	}
	if as := b.Dispatch(now, nil); len(as) != 1 || as[0].Job != 3 {
		t.Fatalf("after resume and requeue: %+v, want job 3 in the free slot", as)
	}
	if err := checkInvariants(b); err != nil {
		t.Fatal(err)
	}
}

// TestCrawlJobs: a crawl's job counts by state follow its jobs, whether
// they were submitted before the broker knew the crawl or after, and
// leave other crawlers' jobs out.
func TestCrawlJobs(t *testing.T) {
	b, err := New(Config{Jitter: -1, MaxRequestFailures: 1})
	if err != nil {
		t.Fatal(err)
	}
	now := epoch
	if err := b.Register(now, 1, WorkerInfo{ID: "w", Slots: 2}, nil); err != nil {
		t.Fatal(err)
	}
	b.Submit(now, Spec{Key: id.Key{Crawler: "news", URL: "http://h/0"}, Host: "h"})
	b.Submit(now, Spec{Key: id.Key{Crawler: "other", URL: "http://h/x"}, Host: "h"})
	if got := b.CrawlJobs("news"); got != (CrawlJobs{}) {
		t.Fatalf("CrawlJobs of a crawl the broker was not told of = %+v, want zero", got)
	}
	b.SetBudget("news", 0, 0)
	for i := 1; i < 4; i++ {
		b.Submit(now, Spec{Key: id.Key{Crawler: "news", URL: "http://h/" + strconv.Itoa(i)}, Host: "h"})
	}
	if got := b.CrawlJobs("news"); got != (CrawlJobs{Queued: 4}) {
		t.Fatalf("after 4 submits: %+v, want 4 queued", got)
	}
	as := b.Dispatch(now, nil) // news/0 and other/x: oldest first
	if len(as) != 2 {
		t.Fatalf("dispatched %d, want 2", len(as))
	}
	if got := b.CrawlJobs("news"); got != (CrawlJobs{Queued: 3, Dispatched: 1}) {
		t.Fatalf("after a dispatch: %+v, want 3 queued, 1 dispatched", got)
	}
	if err := result(b, now, 1, as[0].Job, Outcome{Kind: External, Error: "bad"}); err != nil {
		t.Fatal(err)
	}
	if got := b.CrawlJobs("news"); got != (CrawlJobs{Queued: 3, Failed: 1}) {
		t.Fatalf("after a failure: %+v, want 3 queued, 1 failed", got)
	}
	if err := checkInvariants(b); err != nil {
		t.Fatal(err)
	}
}

// TestRefuse: a job refused for a budget held elsewhere fails at once as
// budget, counted in its crawl's failed jobs, is never dispatched, and can
// be requeued.
func TestRefuse(t *testing.T) {
	b := oneWorker(t, 10)
	now := epoch
	b.SetBudget("news", 0, 0) // counted here, limited elsewhere
	jid := b.Refuse(now, Spec{Key: id.Key{Crawler: "news", URL: "http://h/1"}, Host: "h"}, 20)
	fin := b.TakeFinished(nil)
	if len(fin) != 1 || fin[0].Job != jid || !fin[0].Failed || fin[0].Skipped != "budget" || fin[0].Error != "budget: crawl news has dispatched its 20 pages" {
		t.Fatalf("finished %+v: want job %d failed as budget of 20 pages", fin, jid)
	}
	if as := b.Dispatch(now, nil); len(as) != 0 {
		t.Fatalf("dispatched %+v: want nothing", as)
	}
	if n := b.CrawlJobs("news"); n.Failed != 1 || n.Queued != 0 {
		t.Fatalf("crawl jobs %+v: want 1 failed, none queued", n)
	}
	if err := b.Requeue(now, jid); err != nil {
		t.Fatal(err)
	}
	if as := b.Dispatch(now, nil); len(as) != 1 || as[0].Job != jid {
		t.Fatalf("after requeue dispatched %+v: want job %d", as, jid)
	}
}
