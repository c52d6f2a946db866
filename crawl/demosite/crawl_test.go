package demosite_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"drover/crawl"
	"drover/crawl/demosite"
)

// settled is how one URL ended in the mini crawl.
type settled struct {
	page     crawl.Page
	depth    int
	attempts int // attempts charged (internal failures and the final one)
	throttle int // throttled answers
	failed   bool
}

// miniCrawl is a coordinator in miniature for the tests: a frontier with
// dedup by normalised URL, workers sharing one Fetcher, internal failures
// retried up to budget attempts, throttled pages retried after their
// Retry-After without charge, and each page's in-scope links submitted in
// one batch with the result.
type miniCrawl struct {
	f      *crawl.Fetcher
	cfg    crawl.Config
	seed   string
	budget int

	mu      sync.Mutex
	seen    map[string]bool
	results map[string]*settled
	jobs    chan job
	pending sync.WaitGroup
	extra   atomic.Int64 // results for URLs submitted twice (must stay 0)
}

type job struct {
	url   string
	depth int
	st    *settled
}

func runMiniCrawl(t *testing.T, f *crawl.Fetcher, cfg crawl.Config, seed string, workers, budget int) map[string]*settled {
	t.Helper()
	c := &miniCrawl{f: f, cfg: cfg, seed: seed, budget: budget,
		seen: map[string]bool{}, results: map[string]*settled{}, jobs: make(chan job, 1<<16)}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	c.submit(0, seed)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range c.jobs {
				c.run(ctx, j)
			}
		}()
	}
	c.pending.Wait()
	close(c.jobs)
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatal("the crawl did not finish within 25s")
	}
	if n := c.extra.Load(); n != 0 {
		t.Errorf("%d URLs were settled twice", n)
	}
	return c.results
}

// submit adds URLs to the frontier, those not seen (dedup), in one batch
// as the coordinator takes a page's links with its result: a worker that
// fetches one of them meanwhile cannot submit another of the batch first,
// one link deeper.
func (c *miniCrawl) submit(depth int, urls ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, u := range urls {
		if c.seen[u] {
			continue
		}
		c.seen[u] = true
		c.pending.Add(1)
		c.jobs <- job{url: u, depth: depth, st: &settled{depth: depth}} // buffered beyond the site's size
	}
}

func (c *miniCrawl) run(ctx context.Context, j job) {
	p := j.st
	p.page = c.f.Fetch(ctx, j.url)
	switch p.page.Outcome {
	case crawl.Throttled:
		p.throttle++
		time.AfterFunc(p.page.RetryAfter, func() { c.jobs <- j }) // the broker's back-off
		return
	case crawl.Internal:
		p.attempts++
		if p.attempts < c.budget && ctx.Err() == nil {
			c.jobs <- j
			return
		}
		p.failed = true
	case crawl.External:
		p.failed = true
	case crawl.OK:
		p.attempts++
		c.submit(j.depth+1, c.cfg.Follow(c.seed, j.depth, p.page.Links)...)
	}
	c.mu.Lock()
	if _, dup := c.results[j.url]; dup {
		c.extra.Add(1)
	}
	c.results[j.url] = p
	c.mu.Unlock()
	c.pending.Done()
}

// TestCrawlFindsExpected crawls the demo site with the real Fetcher and a
// miniature coordinator and checks the result against Expected, page by
// page: the same URL set, statuses, depths and titles, robots honoured,
// 429/503 pages fetched only after their Retry-After, flapping pages
// retried until they work, the broken page failed after the retry budget,
// the calendar trap cut at the depth limit, nothing off-site or
// unreachable requested, and every page requested once plus its retries.
func TestCrawlFindsExpected(t *testing.T) {
	tests := []struct {
		name     string
		named    bool // crawl http://demo.test (pinned to the server) rather than http://127.0.0.1:port
		scope    crawl.Scope
		maxDepth int
	}{
		{"named host, default port spellings", true, crawl.ScopeHost, crawl.DefaultMaxDepth},
		{"ip and port, domain scope", false, crawl.ScopeDomain, crawl.DefaultMaxDepth},
		{"prefix scope, depth 2", true, crawl.ScopePrefix, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var offsiteHits atomic.Int64
			offsite := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				offsiteHits.Add(1)
			}))
			defer offsite.Close()
			// The off-site link names another host, pinned to a server
			// that counts requests, so a scope leak would show.
			site := demosite.New(demosite.Options{OffSite: "http://elsewhere.test/x"})
			srv := httptest.NewServer(site)
			defer srv.Close()

			cfg := crawl.DefaultConfig("test")
			cfg.MinDelay = 0 // politeness has its own tests; keep this one fast
			cfg.PerHost = 4
			cfg.Scope, cfg.MaxDepth = tt.scope, tt.maxDepth
			cfg.Resolve = map[string]string{"elsewhere.test:80": offsite.Listener.Addr().String()}
			origin := srv.URL
			if tt.named {
				origin = "http://demo.test"
				cfg.Resolve["demo.test:80"] = srv.Listener.Addr().String()
			}
			want, err := site.Expect(origin, tt.maxDepth)
			if err != nil {
				t.Fatal(err)
			}
			f, err := crawl.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()

			got := runMiniCrawl(t, f, cfg, want.Seed, 8, want.MinAttempts)
			compare(t, site, want, got)
			if n := offsiteHits.Load(); n != 0 {
				t.Errorf("the off-site server was requested %d times", n)
			}
			if tt.maxDepth == crawl.DefaultMaxDepth && len(got) < 300 {
				t.Errorf("only %d pages crawled; the site has a few hundred", len(got))
			}
		})
	}
}

func compare(t *testing.T, site *demosite.Site, want demosite.Expected, got map[string]*settled) {
	t.Helper()
	var missing, extra []string
	for u := range want.Pages {
		if got[u] == nil {
			missing = append(missing, u)
		}
	}
	for u := range got {
		if _, ok := want.Pages[u]; !ok {
			extra = append(extra, u)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	if len(missing)+len(extra) > 0 {
		t.Fatalf("crawled set differs from Expected (%d pages):\nmissing %q\nextra   %q", len(want.Pages), missing, extra)
	}
	for u, w := range want.Pages {
		g := got[u]
		p := g.page
		if g.depth != w.Depth {
			t.Errorf("%s at depth %d, want %d", u, g.depth, w.Depth)
		}
		switch w.Outcome {
		case demosite.Disallowed:
			if !p.Disallowed || p.Status != 0 || p.Outcome != crawl.OK {
				t.Errorf("%s: %v, want disallowed", u, p)
			}
		case demosite.Failed:
			if !g.failed || p.Status != w.Status || g.attempts != want.MinAttempts {
				t.Errorf("%s: failed=%v status %d after %d attempts, want failed %d after %d", u, g.failed, p.Status, g.attempts, w.Status, want.MinAttempts)
			}
		case demosite.Fetched:
			if g.failed || p.Outcome != crawl.OK || p.Status != w.Status || p.Disallowed {
				t.Errorf("%s: %v, want status %d", u, p, w.Status)
			}
			if p.Title != w.Title {
				t.Errorf("%s: title %q, want %q", u, p.Title, w.Title)
			}
			if g.throttle != w.Refusals || g.attempts != w.Failures+1 {
				t.Errorf("%s: %d throttles and %d attempts, want %d and %d", u, g.throttle, g.attempts, w.Refusals, w.Failures+1)
			}
		}
	}
	// Requests as the site saw them.
	byTarget := map[string][]demosite.Hit{}
	requests := 0
	for _, h := range site.Hits() {
		if h.Target == "/robots.txt" {
			continue
		}
		requests++
		byTarget[h.Target] = append(byTarget[h.Target], h)
	}
	if requests != want.Requests {
		t.Errorf("the site answered %d requests, want %d", requests, want.Requests)
	}
	if n := site.Requests("/robots.txt"); n != 1 {
		t.Errorf("robots.txt requested %d times, want once", n)
	}
	for _, w := range want.Pages {
		hits := byTarget[w.Target]
		wantN := 1 + w.Refusals + w.Failures
		switch w.Outcome {
		case demosite.Disallowed:
			wantN = 0
		case demosite.Failed:
			wantN = w.Failures
		}
		if len(hits) != wantN {
			t.Errorf("%s requested %d times, want %d", w.Target, len(hits), wantN)
		}
		// A refused page is asked again only after its Retry-After.
		for i := 1; i < len(hits) && w.Refusals > 0; i++ {
			if prev := hits[i-1]; prev.Status == 429 || prev.Status == 503 {
				if gap := hits[i].At.Sub(prev.At); gap < site.Options().RetryAfter {
					t.Errorf("%s asked again %v after a %d with Retry-After %v", w.Target, gap, prev.Status, site.Options().RetryAfter)
				}
			}
		}
	}
	for _, u := range want.Unreachable {
		target := strings.TrimPrefix(u, want.Origin)
		if n := site.Requests(target); n != 0 {
			t.Errorf("unreachable page %s was requested %d times", target, n)
		}
	}
}
