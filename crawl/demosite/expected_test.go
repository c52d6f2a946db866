package demosite

import (
	"net/url"
	"strings"
	"testing"

	"drover/crawl"
)

func TestExpectRejects(t *testing.T) {
	s := New(Options{})
	tests := []struct {
		origin string
		depth  int
	}{
		{"http://demo.test", 0},
		{"http://demo.test", -1},
		{"ftp://demo.test", 5},
		{"http://demo.test/sub", 5},
		{"http://demo.test/?q", 5},
		{"http://user@demo.test", 5},
		{"demo.test", 5},
	}
	for _, tt := range tests {
		if _, err := s.Expect(tt.origin, tt.depth); err == nil {
			t.Errorf("Expect(%q, %d) succeeded", tt.origin, tt.depth)
		}
	}
}

// TestGraphDiscoveryIsOrderFree checks the property that makes Expected
// exact for a concurrent crawl: every link either goes to the page itself,
// to an ancestor, to a child of an ancestor-or-self (discovered with that
// ancestor's batch, before this page could run), or is the tree edge to a
// child whose only discoverer at its level is this page.
func TestGraphDiscoveryIsOrderFree(t *testing.T) {
	s := New(Options{})
	const depth = 12
	parent := map[string]string{"/": ""}
	level := map[string]int{"/": 0}
	queue := []string{"/"}
	for len(queue) > 0 {
		path := queue[0]
		queue = queue[1:]
		p, ok := s.lookup(path, path)
		if !ok || level[path] >= depth {
			continue
		}
		for _, l := range p.links {
			if !strings.HasPrefix(l.target, "/") {
				continue
			}
			if _, seen := level[l.target]; !seen {
				parent[l.target] = path
				level[l.target] = level[path] + 1
				queue = append(queue, l.target)
			}
		}
	}
	ancestorOrSelf := func(a, p string) bool {
		for x := p; ; x = parent[x] {
			if x == a {
				return true
			}
			if x == "/" {
				return false
			}
		}
	}
	for path := range level {
		p, ok := s.lookup(path, path)
		if !ok || level[path] >= depth {
			continue
		}
		for _, l := range p.links {
			tg := l.target
			if !strings.HasPrefix(tg, "/") {
				continue
			}
			switch {
			case tg == path, ancestorOrSelf(tg, path), parent[tg] == path:
			case ancestorOrSelf(parent[tg], path):
			default:
				t.Errorf("%s links %s (level %d, parent %s): a concurrent crawl could find it at another depth",
					path, tg, level[tg], parent[tg])
			}
		}
	}
	if len(level) < 300 {
		t.Errorf("only %d pages within depth %d; the site should have a few hundred", len(level), depth)
	}
}

// TestRobotsAgreeWithGraph checks the pages marked disallowed against the
// site's robots.txt as the crawler reads it, for drover and for any other
// agent (the "*" group), and that slowbot is shut out.
func TestRobotsAgreeWithGraph(t *testing.T) {
	s := New(Options{})
	e, err := s.Expect("http://demo.test", 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, agent := range []string{"drover", "otherbot"} {
		rb := crawl.ParseRobots([]byte(Robots), agent)
		if rb.CrawlDelay != 0 {
			t.Errorf("%s gets Crawl-delay %v; only slowbot should", agent, rb.CrawlDelay)
		}
		for u, f := range e.Pages {
			pu, _ := url.Parse(u)
			if allowed := rb.Allowed(pu.RequestURI()); allowed == (f.Outcome == Disallowed) {
				t.Errorf("%s: robots.txt allows %s = %v, but the graph says %s", agent, u, allowed, f.Outcome)
			}
		}
	}
	if crawl.ParseRobots([]byte(Robots), "slowbot").Allowed("/") {
		t.Error("slowbot is allowed")
	}
}

func TestExpectedCounts(t *testing.T) {
	s := New(Options{})
	full, err := s.Expect("http://demo.test", 10)
	if err != nil {
		t.Fatal(err)
	}
	// Figures that follow from the site's structure, not from Expect.
	tree := 1 + 1 + 2 + len(sections)*(1+chapters*(1+leaves)) // home, about, 2 files, sections
	tree += 1 + 4*2 + 3                                       // status, 4 specials with a child, broken, missing, data.txt
	tree += 3 + 2 + 1                                         // private, secret, open; 2 redirects, landing
	calendar := 1 + 2*(10-1)                                  // the entry at depth 1, then both ways to depth 10
	if got := len(full.Pages); got != tree+calendar {
		t.Errorf("%d pages, want %d (tree) + %d (calendar)", got, tree, calendar)
	}
	checks := []struct {
		name      string
		got, want int
	}{
		{"Calendar", full.Calendar, calendar},
		{"Disallowed", full.Disallowed, 3},
		{"Failed", full.Failed, 1},
		{"NotFound", full.NotFound, 1},
		{"Redirects", full.Redirects, 2},
		{"Throttled", full.Throttled, 2},
		{"Flapping", full.Flapping, 1},
		{"MinAttempts", full.MinAttempts, 3},
		{"Fetched+Disallowed+Failed", full.Fetched + full.Disallowed + full.Failed, len(full.Pages)},
		{"Requests", full.Requests, full.Fetched + 2*2 + 2 + 3},
		{"Statuses[200]", full.Statuses[200], full.Fetched - 3},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if len(full.OffSite) != 1 || full.OffSite[0] != "http://offsite.invalid/" {
		t.Errorf("OffSite = %q", full.OffSite)
	}
	if f := full.Pages["http://demo.test/blog/ch-8/page-10.html"]; f.Depth != 3 || f.Title != "Blog · Chapter 8 · Page 10" || !f.LinksFollow {
		t.Errorf("a leaf: %+v", f)
	}
	if f := full.Pages["http://demo.test/status/broken.html"]; f.Outcome != Failed || f.Status != 500 || f.Failures != 3 {
		t.Errorf("broken: %+v", f)
	}
	if _, ok := full.Pages["http://demo.test/private/inner.html"]; ok {
		t.Error("a page behind a disallowed one is expected")
	}
	if got := len(full.URLs(Disallowed)); got != 3 {
		t.Errorf("URLs(Disallowed) has %d", got)
	}

	// Depth 1: home and its children, links of the children not followed.
	one, _ := s.Expect("http://127.0.0.1:8080", 1)
	if got := len(one.Pages); got != 1+11 {
		t.Errorf("depth 1: %d pages, want home + its 11 in-site children", got)
	}
	for u, f := range one.Pages {
		if !strings.HasPrefix(u, "http://127.0.0.1:8080/") {
			t.Errorf("URL %s not on the origin", u)
		}
		if f.Depth == 1 && f.LinksFollow {
			t.Errorf("%s at the depth limit has its links followed", u)
		}
	}
}
