package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

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

// pageFetcher fetches one page: a *crawl.Fetcher (see fetcherFor).
type pageFetcher interface {
	Fetch(ctx context.Context, rawURL string) crawl.Page
}

// fetcherFor is what the crawl handlers fetch with: the shared Fetcher.
// BenchmarkCrawlCoordination replaces it to measure everything but the
// fetch.
var fetcherFor = func(f *crawl.Fetcher) pageFetcher { return f }

// crawlHandler fetches a job's page with the shared fetcher, returns the
// page record as the job's output, and the in-scope links one level deeper
// as discovered work, submitted with the result in one batch.
func crawlHandler(f pageFetcher, cfg crawl.Config, workerID string) worker.Handler {
	var payloads payloadCache
	return func(ctx context.Context, j worker.Job) worker.Result {
		p, err := payloads.decode(j.Payload)
		if err != nil {
			return worker.Result{Outcome: wire.OutcomeExternal, Error: err.Error()}
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
		out := rec.AppendJSON(nil)
		res := worker.Result{Outcome: wire.OutcomeOK, Output: out}
		links := cfg.Follow(p.Seed, p.Depth, page.Links)
		if len(links) > 0 {
			child := payloads.encode(crawlPayload{Depth: p.Depth + 1, Seed: p.Seed})
			res.Links = make([]wire.SubmitItem, len(links))
			for i, l := range links {
				res.Links[i] = wire.SubmitItem{Key: id.Key{Crawler: j.Key.Crawler, Processor: j.Key.Processor, URL: l}, Payload: child}
			}
		}
		return res
	}
}

// payloadCache decodes and encodes crawl payloads, remembering the ones it
// has seen: a crawl has one per seed and depth, and decoding the same few
// bytes of JSON for every page was a visible part of a worker's time.
type payloadCache struct {
	mu  sync.Mutex
	dec map[string]crawlPayload
	enc map[crawlPayload][]byte
}

// maxCachedPayloads bounds the cache (many seeds, deep crawls): past it,
// payloads are decoded and encoded every time.
const maxCachedPayloads = 4096

func (c *payloadCache) decode(b []byte) (crawlPayload, error) {
	c.mu.Lock()
	cached, ok := c.dec[string(b)]
	c.mu.Unlock()
	if ok {
		return cached, nil
	}
	// A variable of its own: the one json.Unmarshal is given escapes to
	// the heap, and a cache hit should not pay for that.
	var p crawlPayload
	if err := json.Unmarshal(b, &p); err != nil || p.Seed == "" {
		return p, fmt.Errorf("crawl payload %q: want {\"depth\":N,\"seed\":URL}", clip(string(b), 80))
	}
	c.mu.Lock()
	if c.dec == nil {
		c.dec = make(map[string]crawlPayload)
	}
	if len(c.dec) < maxCachedPayloads {
		c.dec[string(b)] = p
	}
	c.mu.Unlock()
	return p, nil
}

// encode returns p's JSON; the bytes are shared: do not modify them.
func (c *payloadCache) encode(p crawlPayload) []byte {
	c.mu.Lock()
	b, ok := c.enc[p]
	c.mu.Unlock()
	if ok {
		return b
	}
	b, _ = json.Marshal(p) // two plain fields: cannot fail
	c.mu.Lock()
	if c.enc == nil {
		c.enc = make(map[crawlPayload][]byte)
	}
	if len(c.enc) < maxCachedPayloads {
		c.enc[p] = b
	}
	c.mu.Unlock()
	return b
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
