package main

import (
	"context"
	"drover/crawl/demosite"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gocolly/colly/v2"
)

// site is a generated local site of n small HTML pages (demosite.Tree): a
// crawl from /p/0 finds every page, level by level (a tree 10 wide, 4 to 5
// deep at 5k to 30k pages).
func site(n int) *httptest.Server { return httptest.NewServer(demosite.Tree(n)) }

var fetchedLine = regexp.MustCompile(`(\d+) pages fetched`)

// droverCrawl runs `drover crawl` as a user would, as a new process (cold:
// its own empty state), with par local workers of one slot, par fetches
// per host and no politeness delay, and returns the pages it fetched.
func droverCrawl(ctx context.Context, bin, seed string, par int) (int, time.Duration, error) {
	state, err := os.MkdirTemp("", "drover-bench-crawl-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(state)
	cmd := exec.CommandContext(ctx, bin, "crawl", seed, "--no-tui", "--workers", strconv.Itoa(par), "--slots", "1",
		"--per-host", strconv.Itoa(par), "--max-depth", "0", "--sitemaps=false", "--crawl-min-delay", "0s",
		"--bind", "tcp://127.0.0.1:*", "--admin", "tcp://127.0.0.1:*", "--events", "tcp://127.0.0.1:*")
	cmd.Env = append(os.Environ(), "DROVER_CONFIG=", "XDG_STATE_HOME="+state, "DROVER_METRICS_LISTEN=")
	began := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(began)
	if err != nil {
		return 0, took, fmt.Errorf("drover crawl: %w\n%s", err, out)
	}
	m := fetchedLine.FindSubmatch(out)
	if m == nil {
		return 0, took, fmt.Errorf("drover crawl printed no %q line:\n%s", "N pages fetched", out)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n, took, nil
}

// collyCrawl crawls from seed with a new colly collector (cold), async,
// parallelism par on every domain, no delay, following every a[href] (its
// default of ignoring robots.txt), and returns the pages it fetched.
func collyCrawl(seed string, par int) (int, time.Duration, error) {
	began := time.Now()
	c := colly.NewCollector(colly.Async(true), colly.MaxDepth(0))
	if err := c.Limit(&colly.LimitRule{DomainGlob: "*", Parallelism: par}); err != nil {
		return 0, 0, err
	}
	var pages atomic.Int64 // async: callbacks run on the collector's goroutines
	c.OnResponse(func(*colly.Response) { pages.Add(1) })
	c.OnHTML("a[href]", func(e *colly.HTMLElement) { _ = e.Request.Visit(e.Attr("href")) })
	if err := c.Visit(seed); err != nil {
		return 0, 0, fmt.Errorf("colly: %w", err)
	}
	c.Wait()
	return int(pages.Load()), time.Since(began), nil
}
