package conformance

import (
	"time"

	"drover/admin"
	"drover/coord/id"
	"drover/net/wire"
)

// frameVectors are the valid messages of the kit: every command at least
// once, every enumeration value, every role. Their frames are what
// wire.Encode produces; their meaning is meaning(m).
func frameVectors() []namedMessage {
	k := func(u string) id.Key { return id.Key{Crawler: "news", Processor: "html", URL: u} }
	fp := func(u string) id.Fingerprint { return k(u).Fingerprint() }
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	return []namedMessage{
		{"hello-worker", &wire.Hello{Req: 1, Role: wire.RoleWorker, ID: "w1", Host: "box", Slots: 4, Heartbeat: time.Second,
			Headers: wire.Headers{{Name: "lang", Value: "en"}, {Name: "threads", Value: "8"}}, Held: []wire.Run{{JobID: 41, Attempt: 1}, {JobID: 42, Attempt: 3}}}},
		{"hello-producer", &wire.Hello{Req: 1, Role: wire.RoleProducer, ID: "p1", Host: "box"}},
		{"hello-console-read-only", &wire.Hello{Req: 2, Role: wire.RoleConsole, ID: "ops", ReadOnly: true, Heartbeat: 500 * time.Millisecond}},
		{"welcome", &wire.Welcome{Req: 1, Session: 9, Heartbeat: time.Second, Liveness: 3, Slots: 4,
			Limits: wire.ProtocolLimits, Server: "drover 0.4.0", Cancel: []wire.Run{{JobID: 42, Attempt: 3}}}},
		{"heartbeat", &wire.Heartbeat{}},
		{"disconnect-goodbye", &wire.Disconnect{Code: wire.CodeOK, Reason: "bye"}},
		{"disconnect-evicted", &wire.Disconnect{Code: wire.CodeEvicted, Reason: "evicted"}},
		{"error", &wire.Error{Req: 3, Code: wire.CodeTooLarge, Msg: "SUBMIT item 3 url: 9000 bytes, want at most 8192"}},
		{"request", &wire.Request{Req: 5, Keys: []id.Key{k("https://a.example/"), {URL: "https://ü.example/ü"}}}},
		{"queue", &wire.Queue{Req: 6, Keys: []id.Key{k("https://a.example/")}}},
		{"done", &wire.Done{Req: 7, Items: []wire.DoneItem{{Key: k("https://a.example/"), Outcome: wire.DoneOK},
			{Key: k("https://b.example/"), Outcome: wire.DoneFailed}}}},
		{"verdicts", &wire.Verdicts{Req: 5, Items: []wire.VerdictItem{
			{Fingerprint: fp("https://a.example/"), Verdict: wire.VerdictOK, Reason: ""},
			{Fingerprint: fp("https://b.example/"), Verdict: wire.VerdictNo, Reason: "queued"},
			{Fingerprint: fp("https://c.example/"), Verdict: wire.VerdictWait, Reason: "requested"},
			{Fingerprint: fp("https://d.example/"), Verdict: wire.VerdictError, Reason: "not-owner"}}}},
		{"answer", &wire.Answer{Req: 5, Items: []wire.VerdictItem{{Fingerprint: fp("https://c.example/"), Verdict: wire.VerdictOK, Reason: "handover"}}}},
		{"submit", &wire.Submit{Req: 42, Jobs: []wire.SubmitItem{
			{Key: k("https://example.com/"), Headers: wire.Headers{{Name: "lang", Value: "en"}}, Payload: []byte(`{"depth":1}`)},
			{Key: id.Key{Crawler: "c", Processor: "p", URL: "https://b/"}}}}},
		{"submitted", &wire.Submitted{Req: 42, Items: []wire.SubmittedItem{
			{Status: wire.SubmitAccepted, JobID: 7, Fingerprint: fp("https://example.com/")},
			{Status: wire.SubmitDuplicate, JobID: 3, Fingerprint: fp("https://b.example/"), Reason: "queued"},
			{Status: wire.SubmitError, Fingerprint: fp("https://c.example/"), Reason: "bad-key: url \"x\": no scheme"},
			{Status: wire.SubmitWait, Fingerprint: fp("https://d.example/"), Reason: "requested"}}}},
		{"job", &wire.Job{Jobs: []wire.JobItem{
			{JobID: 101, Attempt: 1, Key: k("https://example.com/"), Headers: wire.Headers{{Name: "lang", Value: "en"}}, Payload: []byte(`{"depth":1}`)},
			{JobID: 102, Attempt: 2, Key: k("https://example.com/a")}}}},
		{"cancel", &wire.Cancel{Runs: []wire.Run{{JobID: 101, Attempt: 1}, {JobID: 102, Attempt: 2}}, Reason: "requeued by an operator"}},
		{"result", &wire.Result{Req: 9, Items: []wire.ResultItem{
			{JobID: 101, Attempt: 1, Outcome: wire.OutcomeOK, Output: []byte("<html>"), Links: []wire.SubmitItem{{Key: k("https://example.com/b")}}},
			{JobID: 102, Attempt: 2, Outcome: wire.OutcomeInternal, Error: "timeout"},
			{JobID: 103, Attempt: 1, Outcome: wire.OutcomeExternal, Error: "HTTP 404"},
			{JobID: 104, Attempt: 1, Outcome: wire.OutcomeThrottled, RetryAfter: 30 * time.Second, Error: "HTTP 429"}}}},
		{"result-ok", &wire.ResultOK{Req: 9, Items: []wire.ResultOKItem{
			{JobID: 101, Attempt: 1, Status: wire.ResultRecorded, Accepted: 1}, {JobID: 102, Attempt: 1, Status: wire.ResultStale},
			{JobID: 103, Attempt: 1, Status: wire.ResultUnknown}}}},
		{"progress", &wire.Progress{JobID: 101, Attempt: 1, Text: "fetching"}},
		{"query", &wire.Query{Req: 5, Query: admin.Query{View: admin.ViewJobs, Limit: 40, Filter: "state=failed"}}},
		{"page", &wire.Page{Req: 5, Page: sampleBodies().page}},
		{"status", &wire.Status{Req: 6}},
		{"totals", &wire.Totals{Req: 6, Totals: admin.Totals{At: at, Queued: 3, Done: 10, WorkersIdle: 1}}},
		{"query-job-by-id", &wire.Query{Req: 8, Query: admin.Query{View: admin.ViewJobs, Key: "17"}}},
		{"action", &wire.Action{Req: 7, Action: admin.Action{Kind: admin.ActRequeue, Targets: []string{"17"}}}},
		{"action-cancel-crawl", &wire.Action{Req: 9, Action: admin.Action{Kind: admin.ActCancel, Crawler: "news"}}},
		{"acted", &wire.Acted{Req: 7, Result: admin.ActionResult{Affected: 1}}},
		{"changed", &wire.Changed{}},
		{"robots", &wire.Robots{Req: 8, Origin: "https://example.com", TTL: 24 * time.Hour, CrawlDelay: 1500 * time.Millisecond,
			Content: []byte("User-agent: *\nDisallow: /private/\nCrawl-delay: 1.5\n")}},
		{"robots-copy", &wire.Robots{Origin: "http://example.com:8080", TTL: time.Hour}},
	}
}

type namedMessage struct {
	name string
	m    wire.Message
}
