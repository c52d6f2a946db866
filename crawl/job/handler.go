// Package job is a crawl as drover jobs: the payload every crawl job
// carries, the worker handler that fetches a job's page and returns its
// record and links, and the sink that turns finished jobs into the crawl's
// JSON lines and summary.
package job

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

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
	return func(ctx context.Context, j worker.Job) worker.Result {
		p := Payload{Seed: j.Key.URL}
		if len(j.Payload) > 0 {
			var err error
			if p, err = decodePayload(j.Payload); err != nil {
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
			// One payload for all of them (it names their parent), shared.
			child, _ := json.Marshal(Payload{Depth: p.Depth + 1, Seed: p.Seed, Scope: p.Scope, MaxDepth: p.MaxDepth, Parent: j.Key.URL}) // plain fields: cannot fail
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

// decodePayload reads a crawl job's payload and checks it.
func decodePayload(b []byte) (Payload, error) {
	p, ok := decodeMarshalled(b)
	if !ok {
		// A variable of its own: the one json.Unmarshal is given escapes
		// to the heap, and the common case should not pay for that.
		var q Payload
		if err := json.Unmarshal(b, &q); err != nil {
			return q, fmt.Errorf("crawl payload %q: want {\"depth\":N,\"seed\":URL} and optionally \"scope\" and \"max_depth\"", clip(string(b), 80))
		}
		p = q
	}
	if p.Seed == "" || p.Depth < 0 || p.MaxDepth < 0 {
		return p, fmt.Errorf("crawl payload %q: want {\"depth\":N,\"seed\":URL} and optionally \"scope\" and \"max_depth\"", clip(string(b), 80))
	}
	if p.Scope != "" {
		if _, err := crawl.ParseScope(p.Scope); err != nil {
			return p, fmt.Errorf("crawl payload %q: %w", clip(string(b), 80), err)
		}
	}
	return p, nil
}

// decodeMarshalled reads b without reflection when it has the form
// json.Marshal gives a Payload: its fields in order, the optional ones
// left out or not, numbers as json.Marshal writes them and strings of
// valid UTF-8 without an escape. It reports false for anything else,
// which json.Unmarshal then reads: what it returns is what json.Unmarshal
// would. Every job of a crawl carries a payload, and json.Unmarshal's
// reflection was a visible part of a worker's time per page.
func decodeMarshalled(b []byte) (p Payload, ok bool) {
	r := payloadReader{b: b}
	if !r.lit(`{"depth":`) || !r.int(&p.Depth) || !r.lit(`,"seed":`) || !r.str(&p.Seed) {
		return p, false
	}
	if r.lit(`,"scope":`) && !r.str(&p.Scope) {
		return p, false
	}
	if r.lit(`,"max_depth":`) && !r.int(&p.MaxDepth) {
		return p, false
	}
	if r.lit(`,"parent":`) && !r.str(&p.Parent) {
		return p, false
	}
	return p, r.lit("}") && len(r.b) == 0
}

// payloadReader consumes a payload's bytes from the front.
type payloadReader struct{ b []byte }

// lit consumes s if b starts with it.
func (r *payloadReader) lit(s string) bool {
	if len(r.b) < len(s) || string(r.b[:len(s)]) != s {
		return false
	}
	r.b = r.b[len(s):]
	return true
}

// int consumes an integer as json.Marshal writes one: an optional minus,
// then 0 or a non-zero digit and up to 17 more (no overflow).
func (r *payloadReader) int(v *int) bool {
	i, neg := 0, false
	if i < len(r.b) && r.b[i] == '-' {
		i, neg = 1, true
	}
	start := i
	n := 0
	for i < len(r.b) && r.b[i] >= '0' && r.b[i] <= '9' && i-start < 18 {
		n = n*10 + int(r.b[i]-'0')
		i++
	}
	switch {
	case i == start, i < len(r.b) && r.b[i] >= '0' && r.b[i] <= '9', // none, or too many
		r.b[start] == '0' && i-start > 1: // a leading zero
		return false
	}
	if neg {
		n = -n
	}
	*v, r.b = n, r.b[i:]
	return true
}

// str consumes a quoted string without escapes, of valid UTF-8 and no
// control characters (json.Marshal escapes those, and json.Unmarshal
// would replace invalid UTF-8).
func (r *payloadReader) str(v *string) bool {
	if len(r.b) == 0 || r.b[0] != '"' {
		return false
	}
	for i := 1; i < len(r.b); i++ {
		switch c := r.b[i]; {
		case c == '"':
			if !utf8.Valid(r.b[1:i]) {
				return false
			}
			*v, r.b = string(r.b[1:i]), r.b[i+1:]
			return true
		case c == '\\' || c < 0x20:
			return false
		}
	}
	return false
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
