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

// crawlRun is one crawl's figures: pages fetched, wall time, and CPU time
// (user + system) of the crawler's own process (drover crawl's; none for
// colly, which runs in this one) and of this process (the site, and for
// colly the crawler too).
type crawlRun struct {
	pages           int
	took            time.Duration
	crawler, bench  time.Duration
	crawlerMeasured bool
}

// droverCrawl runs `drover crawl` as a user would, as a new process (cold:
// its own empty state), with par local workers of one slot, par fetches
// per host and no politeness delay.
func droverCrawl(ctx context.Context, bin, seed string, par int) (crawlRun, error) {
	state, err := os.MkdirTemp("", "drover-bench-crawl-")
	if err != nil {
		return crawlRun{}, err
	}
	defer os.RemoveAll(state)
	cmd := exec.CommandContext(ctx, bin, "crawl", seed, "--no-tui", "--workers", strconv.Itoa(par), "--slots", "1",
		"--per-host", strconv.Itoa(par), "--max-depth", "0", "--sitemaps=false", "--crawl-min-delay", "0s",
		"--bind", "tcp://127.0.0.1:*", "--admin", "tcp://127.0.0.1:*", "--events", "tcp://127.0.0.1:*")
	cmd.Env = append(os.Environ(), "DROVER_CONFIG=", "XDG_STATE_HOME="+state, "DROVER_METRICS_LISTEN=")
	self := selfCPU()
	began := time.Now()
	out, err := cmd.CombinedOutput()
	r := crawlRun{took: time.Since(began), bench: selfCPU() - self}
	if err != nil {
		return r, fmt.Errorf("drover crawl: %w\n%s", err, out)
	}
	r.crawler, r.crawlerMeasured = cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime(), true
	m := fetchedLine.FindSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("drover crawl printed no %q line:\n%s", "N pages fetched", out)
	}
	r.pages, _ = strconv.Atoi(string(m[1]))
	return r, nil
}

// collyCrawl crawls from seed with a new colly collector (cold), async,
// parallelism par on every domain, no delay, following every a[href] (its
// default of ignoring robots.txt).
func collyCrawl(seed string, par int) (crawlRun, error) {
	self := selfCPU()
	began := time.Now()
	c := colly.NewCollector(colly.Async(true), colly.MaxDepth(0))
	if err := c.Limit(&colly.LimitRule{DomainGlob: "*", Parallelism: par}); err != nil {
		return crawlRun{}, err
	}
	var pages atomic.Int64 // async: callbacks run on the collector's goroutines
	c.OnResponse(func(*colly.Response) { pages.Add(1) })
	c.OnHTML("a[href]", func(e *colly.HTMLElement) { _ = e.Request.Visit(e.Attr("href")) })
	if err := c.Visit(seed); err != nil {
		return crawlRun{}, fmt.Errorf("colly: %w", err)
	}
	c.Wait()
	return crawlRun{pages: int(pages.Load()), took: time.Since(began), bench: selfCPU() - self}, nil
}

// crawlSide is one crawler's figures over the rounds: pages/s, and CPU
// microseconds per page of its process and of this one.
type crawlSide struct {
	name                string
	run                 func() (crawlRun, error)
	rate, crawler, self series
}

func benchCrawl(ctx context.Context, cfg config) error {
	fmt.Printf("## Crawl pages/s\n\nA generated local site (page i links to 10i+1…10i+10), crawled from /p/0 to the end; parallelism %d, no delay, each crawl started cold; %d rounds, sides alternating.\n\n",
		cfg.par, cfg.rounds)
	fmt.Printf("CPU per page (user + system, µs): drover crawl's process (its children's rusage), and this process: the site's server, and on colly's side colly too (it runs here).\n\n")
	fmt.Printf("| pages | side | rounds (pages/s) | median | / colly | drover crawl CPU µs/page (rounds) | this process CPU µs/page (rounds) | load average |\n|---|---|---|---|---|---|---|---|\n")
	for _, n := range cfg.pages {
		hs := site(n)
		seed := hs.URL + "/p/0"
		sides := []*crawlSide{{name: "drover", run: func() (crawlRun, error) { return droverCrawl(ctx, cfg.drover, seed, cfg.par) }}}
		if cfg.base != "" {
			sides = append(sides, &crawlSide{name: "drover (base)", run: func() (crawlRun, error) { return droverCrawl(ctx, cfg.base, seed, cfg.par) }})
		}
		colly := &crawlSide{name: "colly", run: func() (crawlRun, error) { return collyCrawl(seed, cfg.par) }}
		sides = append(sides, colly)
		err := alternate(cfg.rounds, func(round int) []func() error {
			fns := make([]func() error, len(sides))
			for i, s := range sides {
				fns[i] = func() error {
					r, err := s.run()
					if err == nil && r.pages != n {
						err = fmt.Errorf("%s fetched %d pages, want %d", s.name, r.pages, n)
					}
					if err != nil {
						return err
					}
					s.rate = append(s.rate, float64(n)/r.took.Seconds())
					if r.crawlerMeasured {
						s.crawler = append(s.crawler, float64(r.crawler.Microseconds())/float64(n))
					}
					s.self = append(s.self, float64(r.bench.Microseconds())/float64(n))
					progress("crawl %d pages round %d: %s %s pages/s", n, round+1, s.name, human(s.rate[len(s.rate)-1]))
					return nil
				}
			}
			return fns
		})
		hs.Close()
		if err != nil {
			return err
		}
		load := loadavg()
		for _, s := range sides {
			ratio, crawler := "—", "—"
			if s != colly {
				ratio = fmt.Sprintf("%.2f×", s.rate.median()/colly.rate.median())
				crawler = fmt.Sprintf("%s (%s)", human(s.crawler.median()), s.crawler)
			}
			fmt.Printf("| %d | %s | %s | %s | %s | %s | %s (%s) | %s |\n", n, s.name, s.rate, human(s.rate.median()), ratio,
				crawler, human(s.self.median()), s.self, load)
		}
	}
	fmt.Println()
	return nil
}
