package conformance

import (
	"time"

	"drover/admin"
)

type bodies struct {
	page admin.Page
}

// sampleBodies are admin JSON bodies with every member set, for the kit's
// admin.json and the PAGE frame vector.
func sampleBodies() bodies {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	return bodies{page: admin.Page{View: admin.ViewJobs, Offset: 0, Total: 1, Jobs: []admin.JobRow{{
		JobID: 17, Key: "76239173fe048a87a5b78ba95468602b", Crawler: "news", Processor: "html", URL: "https://example.com/",
		State: "failed", Attempts: 3, Failures: 3, Worker: "w1", LastError: "timeout", Created: at, Updated: at.Add(time.Minute),
		History: []admin.Attempt{{Worker: "w1", At: at, Outcome: "internal", Error: "timeout"}}}}}}
}

// adminSamples are the admin.json vectors: a body of each type, named by
// the schema it must satisfy.
func adminSamples() []adminSample {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	return []adminSample{
		{"query-jobs", "Query", admin.Query{View: admin.ViewJobs, Offset: 40, Limit: 40, Sort: "age", Desc: true, Filter: "state=failed host=example.com"}},
		{"query-waiters", "Query", admin.Query{View: admin.ViewWaiters, Key: "76239173fe048a87a5b78ba95468602b"}},
		{"query-results", "Query", admin.Query{View: admin.ViewResults, From: 120, Limit: 100, Filter: "crawler=news"}},
		{"page-workers", "Page", admin.Page{View: admin.ViewWorkers, Total: 1, Workers: []admin.WorkerRow{{
			ID: "w1", Host: "box", Headers: map[string]string{"lang": "en"}, State: "busy", Slots: 4, Used: 1, Jobs: []uint64{17},
			Done: 10, Failures: 1, LastHeartbeat: at, Since: at.Add(-time.Hour)}}}},
		{"page-jobs", "Page", sampleBodies().page},
		{"page-jobs-waiting", "Page", admin.Page{View: admin.ViewJobs, Total: 1, Jobs: []admin.JobRow{{
			JobID: 18, Key: "0f1e2d3c4b5a69788796a5b4c3d2e1f0", Crawler: "news", Processor: "html", URL: "https://example.com/next",
			State: "queued", Reason: "polite: next dispatch to example.com at 2026-12-01T12:00:01Z (limit 1 per 1s)",
			Wait: admin.WaitPolite, Created: at, Updated: at}}}},
		{"page-retries", "Page", admin.Page{View: admin.ViewRetries, Total: 0,
			Hosts: []admin.HostRow{{Host: "example.com", Until: at.Add(time.Minute), Throttles: 2, Jobs: 5}}}},
		{"page-waiters", "Page", admin.Page{View: admin.ViewWaiters, Total: 1, Waiters: []admin.WaiterRow{{Position: 1, Session: "s3 p1", Since: at}}}},
		{"page-events", "Page", admin.Page{View: admin.ViewEvents, Total: 1, Events: []admin.Event{{Seq: 7, At: at, Kind: admin.EventJobDone,
			JobID: 17, Key: "76239173fe048a87a5b78ba95468602b", URL: "https://example.com/", Worker: "w1"}}}},
		{"page-results", "Page", admin.Page{View: admin.ViewResults, Total: 1, Next: 121, First: 1, Last: 121, Results: []admin.Result{{
			Cursor: 121, JobID: 17, Crawler: "news", Processor: "html", URL: "https://example.com/", Outcome: "ok", Attempt: 1,
			Worker: "w1", FinishedAt: at, Output: "<html>"}}}},
		{"totals", "Totals", admin.Totals{At: at, Paused: true, Queued: 1, Dispatched: 2, Backoff: 3, Done: 4, Failed: 5, Unroutable: 1,
			KeysRequested: 1, KeysQueued: 2, KeysDone: 3, Waiters: 1, WorkersIdle: 1, WorkersBusy: 2, WorkersDraining: 1, WorkersLost: 0,
			Dispatches: 10, Completions: 9, Failures: 1, Throttles: 2, DedupHits: 3, StaleResults: 0, Malformed: 1}},
		{"action-evict", "Action", admin.Action{Kind: admin.ActEvict, Targets: []string{"w1"}}},
		{"action-pause", "Action", admin.Action{Kind: admin.ActPause}},
		{"action-define-crawl", "Action", admin.Action{Kind: admin.ActDefineCrawl, Crawl: &admin.Crawl{Name: "news", Scope: "domain", MaxDepth: 3, MaxPages: 1000}}},
		{"page-crawls", "Page", admin.Page{View: admin.ViewCrawls, Total: 1, Crawls: []admin.Crawl{{Name: "news", Scope: "host", MaxPages: 100, Pages: 7, Defined: at}}}},
		{"acted", "ActionResult", admin.ActionResult{Affected: 1, Errors: []string{"job 99: not found"}}},
		{"event", "Event", admin.Event{Seq: 8, At: at, Kind: admin.EventHostBackoff, Detail: "example.com until 2026-12-01T12:01:00Z"}},
	}
}

type adminSample struct {
	name, schema string
	body         any
}
