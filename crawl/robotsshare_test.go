package crawl

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestRobotsReportedOnce: the file a Fetcher fetched itself goes to the
// first page that used it (for the worker to report), with the body, the
// time left and the Crawl-delay for its token; no other page carries it.
func TestRobotsReportedOnce(t *testing.T) {
	body := "User-agent: *\nDisallow: /private/\nCrawl-delay: 0.25\n"
	site := newRobotsSite(200, body)
	srv := newServer(t, site)
	f := newFetcher(t, testConfig())
	var wg sync.WaitGroup
	pages := make([]Page, 8)
	for i := range pages {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pages[i] = f.Fetch(context.Background(), srv.URL+"/p")
		}()
	}
	wg.Wait()
	var got []*RobotsCopy
	for _, p := range pages {
		if p.Robots != nil {
			got = append(got, p.Robots)
		}
	}
	if len(got) != 1 {
		t.Fatalf("%d pages carry the robots.txt report, want 1", len(got))
	}
	r := got[0]
	if r.Origin != srv.URL || string(r.Body) != body || r.CrawlDelay != 250*time.Millisecond || r.TTL <= 0 || r.TTL > DefaultRobotsTTL {
		t.Errorf("report %q %q delay %v ttl %v; want %q, the body, 250ms, (0, %v]", r.Origin, r.Body, r.CrawlDelay, r.TTL, srv.URL, DefaultRobotsTTL)
	}
	if p := f.Fetch(context.Background(), srv.URL+"/private/x"); !p.Disallowed || p.Robots != nil {
		t.Errorf("a later page: disallowed %v, report %v; want disallowed, no report", p.Disallowed, p.Robots)
	}
}

// TestRobotsCopyUsed: a Fetcher given a copy another worker fetched
// (UseRobots) applies it for its own token and never asks the site for
// robots.txt; it reports nothing; once the copy expires it fetches the file.
func TestRobotsCopyUsed(t *testing.T) {
	site := newRobotsSite(200, "User-agent: *\nAllow: /\n")
	srv := newServer(t, site)
	clk := newFakeClock()
	f := newFetcher(t, testConfig(), WithClock(clk))
	f.UseRobots(RobotsCopy{Origin: srv.URL, Body: []byte("User-agent: drover\nDisallow: /no/\n\nUser-agent: *\nDisallow: /\n"), TTL: time.Minute})
	if p := f.Fetch(context.Background(), srv.URL+"/no/x"); !p.Disallowed || p.Robots != nil {
		t.Errorf("/no/x: disallowed %v, report %v; want disallowed by the copy's drover group, no report", p.Disallowed, p.Robots)
	}
	if p := f.Fetch(context.Background(), srv.URL+"/yes"); p.Disallowed || p.Status != 200 {
		t.Errorf("/yes: disallowed %v status %d; want fetched (the copy's drover group allows it)", p.Disallowed, p.Status)
	}
	if n := site.count("/robots.txt"); n != 0 {
		t.Errorf("robots.txt requested %d times with a copy in hand, want 0", n)
	}
	clk.Advance(time.Minute)
	if p := f.Fetch(context.Background(), srv.URL+"/no/x"); p.Disallowed || p.Robots == nil {
		t.Errorf("after the copy expired: disallowed %v, report %v; want the site's own file (allows) fetched and reported", p.Disallowed, p.Robots)
	}
	if n := site.count("/robots.txt"); n != 1 {
		t.Errorf("robots.txt requested %d times after the copy expired, want 1", n)
	}
}
