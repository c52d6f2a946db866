package broker

import (
	"strconv"
	"testing"

	"drover/coord/id"
)

// TestBudget: a crawl with a budget of 3 pages dispatches 3 of its 5 jobs
// (a retry does not count again) and fails the other 2 as budget; another
// crawler is not limited.
func TestBudget(t *testing.T) {
	b, err := New(Config{Jitter: -1})
	if err != nil {
		t.Fatal(err)
	}
	now := epoch
	if err := b.Register(now, 1, WorkerInfo{ID: "w", Slots: 10}, nil); err != nil {
		t.Fatal(err)
	}
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
	if len(fin) != 2 || !fin[0].Budget || !fin[1].Budget || !fin[0].Failed {
		t.Fatalf("finished %+v: want 2 budget failures", fin)
	}
	if used, limit, ok := b.BudgetUsed("news"); used != 3 || limit != 3 || !ok {
		t.Fatalf("BudgetUsed = %d, %d, %v; want 3 of 3", used, limit, ok)
	}
	// A retry of a dispatched job is not a new page.
	if err := result(b, now, 1, as[0].Job, Outcome{Kind: Internal}); err != nil {
		t.Fatal(err)
	}
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
