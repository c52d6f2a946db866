// Package job is a crawl as drover jobs: the payload every crawl job
// carries, the worker handler that fetches a job's page and returns its
// record and links, and the sink that turns finished jobs into the crawl's
// JSON lines and summary.
package job

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"drover/coord/id"
	"drover/crawl"
	"drover/net/wire"
	"drover/net/worker"
)

// Payload is the payload every crawl job carries (crawl.JobPayload: the
// coordinator builds seeds' payloads too, and must not import the worker
// side).
type Payload = crawl.JobPayload

// Crawler and Processor name the work keys of a crawl.
const (
	Crawler   = "crawl"
	Processor = "fetch"
)

// SeedItem is the SUBMIT record that starts a crawl at seed.
func SeedItem(seed string) (wire.SubmitItem, error) {
	p, err := json.Marshal(Payload{Depth: 0, Seed: seed})
	if err != nil {
		return wire.SubmitItem{}, err
	}
	return wire.SubmitItem{Key: id.Key{Crawler: Crawler, Processor: Processor, URL: seed}, Payload: p}, nil
}

// Fetcher fetches one page: a *crawl.Fetcher, or a stand-in in benchmarks
// that measure everything but the fetch.
type Fetcher interface {
	Fetch(ctx context.Context, rawURL string) crawl.Page
}

// Handler fetches a job's page with the shared fetcher, returns the
// page record as the job's output, and the in-scope links one level deeper
// as discovered work, submitted with the result in one batch.
func Handler(f Fetcher, cfg crawl.Config, workerID string) worker.Handler {
	var payloads payloadCache
	return func(ctx context.Context, j worker.Job) worker.Result {
		p := Payload{Seed: j.Key.URL}
		if len(j.Payload) > 0 {
			var err error
			if p, err = payloads.decode(j.Payload); err != nil {
				return worker.Result{Outcome: wire.OutcomeExternal, Error: err.Error()}
			}
		}
		follow := cfg
		if p.Scope != "" {
			sc, _ := crawl.ParseScope(p.Scope) // checked by decode
			follow.Scope, follow.MaxDepth = sc, p.MaxDepth
		}
		ctx = crawl.WithSeed(ctx, p.Seed) // the private-address guard judges by the crawl's seed
		page := f.Fetch(ctx, j.Key.URL)
		rec := page.Record(p.Depth, workerID, j.Attempt)
		rec.Parent = p.Parent
		robots := toWireRobots(page.Robots)
		switch page.Outcome {
		case crawl.Throttled:
			return worker.Result{Outcome: wire.OutcomeThrottled, RetryAfter: page.RetryAfter, Error: page.Err, Robots: robots}
		case crawl.Internal:
			return worker.Result{Outcome: wire.OutcomeInternal, Error: page.Err, Robots: robots}
		case crawl.External:
			return worker.Result{Outcome: wire.OutcomeExternal, Error: page.Err, Robots: robots}
		}
		out := rec.AppendJSON(nil)
		res := worker.Result{Outcome: wire.OutcomeOK, Output: out, Robots: robots}
		found := page.Links
		if p.Depth == 0 && cfg.Sitemaps {
			found = append(found, seedSitemaps(ctx, f, j.Key.URL)...)
		}
		links := follow.Follow(p.Seed, p.Depth, found)
		if len(links) > 0 {
			child := payloads.encode(Payload{Depth: p.Depth + 1, Seed: p.Seed, Scope: p.Scope, MaxDepth: p.MaxDepth, Parent: j.Key.URL})
			res.Links = make([]wire.SubmitItem, len(links))
			for i, l := range links {
				res.Links[i] = wire.SubmitItem{Key: id.Key{Crawler: j.Key.Crawler, Processor: j.Key.Processor, URL: l}, Payload: child}
			}
		}
		return res
	}
}

// UseRobots is a worker's worker.Options.Robots for a crawl: the
// robots.txt copies the coordinator sends go to f's cache, so that f does
// not fetch those files itself.
func UseRobots(f *crawl.Fetcher) func(wire.Robots) {
	return func(r wire.Robots) {
		f.UseRobots(crawl.RobotsCopy{Origin: r.Origin, Body: r.Content, TTL: r.TTL, CrawlDelay: r.CrawlDelay})
	}
}

// toWireRobots is the ROBOTS report of a robots.txt a fetch fetched.
func toWireRobots(c *crawl.RobotsCopy) *wire.Robots {
	if c == nil || len(c.Body) > wire.MaxRobots {
		return nil
	}
	// The wire carries whole milliseconds: a TTL is rounded down (never
	// trusted longer), a Crawl-delay up (never shorter).
	ttl := min(c.TTL, wire.MaxHeartbeat).Truncate(time.Millisecond)
	delay := min((c.CrawlDelay + time.Millisecond - 1).Truncate(time.Millisecond), wire.MaxHeartbeat.Truncate(time.Millisecond))
	if ttl <= 0 {
		return nil
	}
	return &wire.Robots{Origin: c.Origin, TTL: ttl, CrawlDelay: delay, Content: c.Body}
}

// seedSitemaps returns the pages the sitemaps of the seed's origin list,
// when f reads sitemaps (a *crawl.Fetcher does; see Fetcher.Sitemaps). A
// sitemap that cannot be read adds nothing: the crawl goes on from the
// seed's links.
func seedSitemaps(ctx context.Context, f Fetcher, seed string) []string {
	s, ok := f.(interface {
		Sitemaps(ctx context.Context, seed string) ([]string, error)
	})
	if !ok {
		return nil
	}
	links, _ := s.Sitemaps(ctx, seed)
	return links
}

// payloadCache decodes and encodes crawl payloads, remembering the ones it
// has seen: a crawl has one per seed and depth, and decoding the same few
// bytes of JSON for every page was a visible part of a worker's time.
type payloadCache struct {
	mu  sync.Mutex
	dec map[string]Payload
	enc map[Payload][]byte
}

// maxCachedPayloads bounds the cache (many seeds, deep crawls): past it,
// payloads are decoded and encoded every time.
const maxCachedPayloads = 4096

func (c *payloadCache) decode(b []byte) (Payload, error) {
	c.mu.Lock()
	cached, ok := c.dec[string(b)]
	c.mu.Unlock()
	if ok {
		return cached, nil
	}
	// A variable of its own: the one json.Unmarshal is given escapes to
	// the heap, and a cache hit should not pay for that.
	var p Payload
	if err := json.Unmarshal(b, &p); err != nil || p.Seed == "" || p.Depth < 0 || p.MaxDepth < 0 {
		return p, fmt.Errorf("crawl payload %q: want {\"depth\":N,\"seed\":URL} and optionally \"scope\" and \"max_depth\"", clip(string(b), 80))
	}
	if p.Scope != "" {
		if _, err := crawl.ParseScope(p.Scope); err != nil {
			return p, fmt.Errorf("crawl payload %q: %w", clip(string(b), 80), err)
		}
	}
	c.mu.Lock()
	if c.dec == nil {
		c.dec = make(map[string]Payload)
	}
	if len(c.dec) < maxCachedPayloads {
		c.dec[string(b)] = p
	}
	c.mu.Unlock()
	return p, nil
}

// encode returns p's JSON; the bytes are shared: do not modify them.
func (c *payloadCache) encode(p Payload) []byte {
	c.mu.Lock()
	b, ok := c.enc[p]
	c.mu.Unlock()
	if ok {
		return b
	}
	b, _ = json.Marshal(p) // two plain fields: cannot fail
	c.mu.Lock()
	if c.enc == nil {
		c.enc = make(map[Payload][]byte)
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
