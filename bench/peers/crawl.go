package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gocolly/colly/v2"
)

// site is a generated local site of n small HTML pages: page i links to
// pages 10i+1 … 10i+10, so a crawl from /p/0 finds every page, level by
// level (a tree 10 wide, 4 to 5 deep at 5k to 30k pages).
func site(n int) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/p/"))
		if err != nil || i < 0 || i >= n || !strings.HasPrefix(r.URL.Path, "/p/") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		var b strings.Builder
		fmt.Fprintf(&b, "<!doctype html><html><head><title>page %d</title></head><body><h1>page %d</h1><p>", i, i)
		for c := 10*i + 1; c <= 10*i+10 && c < n; c++ {
			fmt.Fprintf(&b, `<a href="/p/%d">page %d</a> `, c, c)
		}
		b.WriteString("</p></body></html>")
		_, _ = io.WriteString(w, b.String())
	}))
}

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
