package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"drover/coord/id"
	"drover/crawl"
	"drover/net/wire"
	"drover/net/worker"
)

// crawlPayload travels with every crawl job: how deep the page is and which
// seed's scope applies to its links.
type crawlPayload struct {
	Depth int    `json:"depth"`
	Seed  string `json:"seed"`
}

// crawlCrawler and crawlProcessor name the work keys of a crawl.
const (
	crawlCrawler   = "crawl"
	crawlProcessor = "fetch"
)

// seedItem is the SUBMIT record that starts a crawl at seed.
func seedItem(seed string) (wire.SubmitItem, error) {
	p, err := json.Marshal(crawlPayload{Depth: 0, Seed: seed})
	if err != nil {
		return wire.SubmitItem{}, err
	}
	return wire.SubmitItem{Key: id.Key{Crawler: crawlCrawler, Processor: crawlProcessor, URL: seed}, Payload: p}, nil
}

// crawlHandler fetches a job's page with the shared fetcher, returns the
// page record as the job's output, and the in-scope links one level deeper
// as discovered work, submitted with the result in one batch.
func crawlHandler(f *crawl.Fetcher, cfg crawl.Config, workerID string) worker.Handler {
	return func(ctx context.Context, j worker.Job) worker.Result {
		var p crawlPayload
		if err := json.Unmarshal(j.Payload, &p); err != nil || p.Seed == "" {
			return worker.Result{Outcome: wire.OutcomeExternal, Error: fmt.Sprintf("crawl payload %q: want {\"depth\":N,\"seed\":URL}", clip(string(j.Payload), 80))}
		}
		page := f.Fetch(ctx, j.Key.URL)
		rec := page.Record(p.Depth, workerID, j.Attempt)
		switch page.Outcome {
		case crawl.Throttled:
			return worker.Result{Outcome: wire.OutcomeThrottled, RetryAfter: page.RetryAfter, Error: page.Err}
		case crawl.Internal:
			return worker.Result{Outcome: wire.OutcomeInternal, Error: page.Err}
		case crawl.External:
			return worker.Result{Outcome: wire.OutcomeExternal, Error: page.Err}
		}
		out, err := json.Marshal(rec)
		if err != nil {
			return worker.Result{Outcome: wire.OutcomeInternal, Error: fmt.Sprintf("encoding the page record: %v", err)}
		}
		res := worker.Result{Outcome: wire.OutcomeOK, Output: out}
		links := cfg.Follow(p.Seed, p.Depth, page.Links)
		if len(links) > 0 {
			child, _ := json.Marshal(crawlPayload{Depth: p.Depth + 1, Seed: p.Seed})
			res.Links = make([]wire.SubmitItem, len(links))
			for i, l := range links {
				res.Links[i] = wire.SubmitItem{Key: id.Key{Crawler: j.Key.Crawler, Processor: j.Key.Processor, URL: l}, Payload: child}
			}
		}
		return res
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
