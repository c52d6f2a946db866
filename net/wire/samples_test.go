package wire

import (
	"fmt"
	"strings"
	"time"

	"drover/admin"
	"drover/coord/id"
)

// Sample messages, one or more per command, used by the round-trip tests,
// the fuzz seeds and the benchmarks.

func key(i int) id.Key {
	return id.Key{Crawler: "news", Processor: "html", URL: fmt.Sprintf("https://example.com/a/%d?x=%d", i, i*7)}
}

func fp(i int) id.Fingerprint { return key(i).Fingerprint() }

func submitItems(n int, payload int) []SubmitItem {
	out := make([]SubmitItem, n)
	for i := range out {
		out[i] = SubmitItem{
			Key:     key(i),
			Headers: Headers{{"lang", "en"}, {"threads", "2"}},
			Payload: []byte(strings.Repeat("p", payload)),
		}
	}
	return out
}

func jobItems(n int) []JobItem {
	out := make([]JobItem, n)
	for i := range out {
		out[i] = JobItem{
			JobID: uint64(1000 + i), Attempt: 1, Key: key(i),
			Headers: Headers{{"hwgroup", "a|b"}},
			Payload: []byte(`{"depth":2}`),
		}
	}
	return out
}

func resultItems(n, links int) []ResultItem {
	out := make([]ResultItem, n)
	for i := range out {
		out[i] = ResultItem{JobID: uint64(1000 + i), Attempt: 1, Outcome: OutcomeOK, Output: []byte("<title>x</title>")}
		if links > 0 {
			out[i].Links = submitItems(links, 0)
		}
	}
	return out
}

func samples() []Message {
	at := time.Date(2025, 3, 4, 5, 6, 7, 8000, time.UTC)
	return []Message{
		&Hello{Req: 1, Role: RoleWorker, ID: "worker-7", Host: "crawl-3.example.net", Slots: 8,
			Heartbeat: 1500 * time.Millisecond, Headers: Headers{{"threads", "4"}, {"hwgroup", "gpu"}}, Held: []Run{{41, 1}, {42, 2}}},
		&Hello{Req: 2, Role: RoleProducer, ID: "feeder", Host: "h"},
		&Hello{Req: 3, Role: RoleConsole, ReadOnly: true, ID: "ops@laptop", Heartbeat: 0},
		&Welcome{Req: 1, Session: 77, Heartbeat: time.Second, Liveness: 3, Slots: 8, Limits: ProtocolLimits,
			Server: "drover 0.1.0", Cancel: []Run{{42, 2}}},
		&Welcome{Req: 2, Session: 78, Heartbeat: 250 * time.Millisecond, Liveness: 5, Limits: Limits{1 << 20, 100, 1 << 10}},
		&Heartbeat{},
		&Disconnect{Code: CodeEvicted, Reason: "evicted by operator ops@laptop"},
		&Disconnect{Code: CodeOK},
		&Error{Req: 9, Code: CodeConflict, Msg: "QUEUE item 0: not the owner of key 1c0f…"},
		&Request{Req: 10, Keys: []id.Key{key(1), key(2), {URL: "https://ünïcode.example/ü"}}},
		&Queue{Req: 11, Keys: []id.Key{key(1)}},
		&Done{Req: 12, Items: []DoneItem{{key(1), DoneOK}, {key(2), DoneFailed}}},
		&Verdicts{Req: 10, Items: []VerdictItem{{fp(1), VerdictOK, ""}, {fp(2), VerdictWait, "requested"}, {fp(3), VerdictNo, "done"}}},
		&Answer{Req: 10, Items: []VerdictItem{{fp(2), VerdictOK, "handover"}}},
		&Submit{Req: 13, Jobs: submitItems(3, 20)},
		&Submit{Req: 14, Jobs: []SubmitItem{{Key: key(5)}}},
		&Submitted{Req: 13, Items: []SubmittedItem{
			{SubmitAccepted, 5001, fp(0), ""}, {SubmitDuplicate, 0, fp(1), "queued"}, {SubmitDuplicate, 4000, fp(1), "queued"},
			{SubmitError, 0, fp(2), "url-invalid"}, {SubmitWait, 0, fp(3), "requested"}}},
		&Job{Jobs: jobItems(2)},
		&Cancel{Runs: []Run{{1000, 1}, {1001, 3}}, Reason: "requeued by operator"},
		&Result{Req: 15, Items: []ResultItem{
			{JobID: 1000, Attempt: 1, Outcome: OutcomeOK, Output: []byte("ok"), Links: submitItems(2, 0)},
			{JobID: 1001, Attempt: 2, Outcome: OutcomeThrottled, RetryAfter: 30 * time.Second, Error: "HTTP 429"},
			{JobID: 1002, Attempt: 1, Outcome: OutcomeInternal, Error: "dial tcp: timeout"},
			{JobID: 1003, Attempt: 7, Outcome: OutcomeExternal, Error: "payload: bad JSON\nline 2"},
		}},
		&ResultOK{Req: 15, Items: []ResultOKItem{{1000, 1, ResultRecorded, 1, 1}, {1001, 2, ResultStale, 0, 0}, {1002, 1, ResultUnknown, 0, 0}}},
		&Progress{JobID: 1000, Attempt: 1, Text: "fetched 3/10 pages"},
		&Query{Req: 20, Query: admin.Query{View: admin.ViewJobs, Offset: 100, Limit: 50, Sort: "updated", Desc: true,
			Filter: "state=failed host=example.com", Key: fp(1).String()}},
		&Page{Req: 20, Page: admin.Page{View: admin.ViewWorkers, Total: 1, Workers: []admin.WorkerRow{{
			ID: "worker-7", Host: "h", Headers: map[string]string{"threads": "4"}, State: "busy", Slots: 8, Used: 2,
			Jobs: []uint64{1, 2}, LastHeartbeat: at, Since: at}}}},
		&Status{Req: 21},
		&Totals{Req: 21, Totals: admin.Totals{At: at, Paused: true, Queued: 5, Done: 100, Dispatches: 7}},
		&Action{Req: 22, Action: admin.Action{Kind: admin.ActDrain, Targets: []string{"worker-7"}}},
		&Action{Req: 23, Action: admin.Action{Kind: admin.ActPause}},
		&Acted{Req: 22, Result: admin.ActionResult{Affected: 1, Errors: []string{"worker-9: unknown"}}},
		&Changed{},
		&Robots{Req: 24, Origin: "https://a.example", TTL: 24 * time.Hour, CrawlDelay: 1500 * time.Millisecond,
			Content: []byte("User-agent: *\nDisallow: /private\nCrawl-delay: 1.5\n")},
		&Robots{Origin: "http://b.example:8080", TTL: time.Hour},
	}
}

func actionOf(kind string, targets ...string) admin.Action {
	return admin.Action{Kind: admin.ActionKind(kind), Targets: targets}
}
