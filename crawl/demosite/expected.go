package demosite

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"drover/crawl"
)

// Outcome is how a page of the site must end in a correct crawl.
type Outcome string

// The outcomes.
const (
	// Fetched: the page is fetched and its final answer recorded (any
	// status, 404 included), after any refusals and failures it answers
	// first.
	Fetched Outcome = "fetched"
	// Disallowed: robots.txt disallows the page; it is never requested.
	Disallowed Outcome = "disallowed"
	// Failed: the page answers 500 on every attempt and ends failed once
	// the retry budget is spent.
	Failed Outcome = "failed"
)

// Fact is what a correct crawl learns about one page.
type Fact struct {
	URL         string  // normalised URL (the work key's URL)
	Target      string  // path and query on the site
	Depth       int     // depth from the seed "/" (0)
	Outcome     Outcome // how the page ends
	Status      int     // the final status (500 for Failed, 0 for Disallowed)
	Title       string  // the <title> of an HTML page
	Refusals    int     // 429 or 503 answers, with Retry-After, before the page is served
	Failures    int     // 500 answers before the page is served (all attempts for Failed)
	LinksFollow bool    // its links are followed (HTML fetched above the depth limit, or a redirect)
}

// Expected is what a correct crawl of the site, seeded at its root, finds.
type Expected struct {
	Origin   string // scheme://host[:port], normalised
	Seed     string // Origin + "/"
	MaxDepth int    // the depth limit it was computed for
	// Pages are every URL the crawl submits and settles, by normalised
	// URL: fetched, disallowed and failed pages.
	Pages map[string]Fact
	// OffSite are links to other sites that the crawl must not follow
	// under any scope (host, domain or prefix of "/").
	OffSite []string
	// Unreachable are pages the site serves but a crawl must never
	// request: linked only from text/plain or robots-disallowed pages.
	Unreachable []string

	Fetched    int // pages with Outcome Fetched
	Disallowed int // pages robots.txt disallows
	Failed     int // pages that end failed
	NotFound   int // fetched pages answering 404
	Redirects  int // fetched pages answering 3xx
	Throttled  int // pages refused with 429 or 503 before being served
	Flapping   int // pages failing with 500 before being served
	Calendar   int // pages of the calendar trap within the depth limit
	// Statuses counts final statuses of fetched and failed pages.
	Statuses map[int]int
	// MinAttempts is the smallest retry budget (attempts per job,
	// failures included) with which the flapping pages are fetched; with
	// fewer they end failed too and this Expected does not hold.
	MinAttempts int
	// Requests is how many requests the crawl makes to the site, not
	// counting robots.txt, when it retries failed pages up to
	// MinAttempts attempts.
	Requests int
}

// Expect computes what a crawl seeded at origin+"/" must find with the
// given depth limit (crawl.Config.MaxDepth semantics: the seed is depth
// 0, pages at maxDepth are fetched and their links not followed), when no
// page limit (MaxPages) cuts it short and the retry budget is at least
// MinAttempts. The calendar trap makes the site infinite, so maxDepth must
// be positive. origin is where the crawl reaches the site, e.g.
// "http://127.0.0.1:8080" or "http://demo.test" (the ":80" spellings of
// links are only distinct URLs when the origin uses the default port).
// The scope (host, domain or prefix) does not change the result.
func (s *Site) Expect(origin string, maxDepth int) (Expected, error) {
	if maxDepth <= 0 {
		return Expected{}, errors.New("demosite: maxDepth must be at least 1: the calendar trap is infinite without a depth limit")
	}
	seed, err := crawl.Normalize(strings.TrimSuffix(origin, "/") + "/")
	if err != nil {
		return Expected{}, fmt.Errorf("demosite: origin %q: %w", origin, err)
	}
	if strings.Count(seed, "/") != 3 || strings.ContainsAny(seed, "?@") {
		return Expected{}, fmt.Errorf("demosite: origin %q: want scheme://host[:port] with no path, query or user", origin)
	}
	e := Expected{
		Origin: strings.TrimSuffix(seed, "/"), Seed: seed, MaxDepth: maxDepth,
		Pages: map[string]Fact{}, Statuses: map[int]int{},
		MinAttempts: s.opts.FlapFailures + 1,
	}
	urlOf := func(target string) string {
		u, err := crawl.Normalize(e.Origin + target)
		if err != nil { // targets are built by buildGraph: a bug, reported as such
			return "invalid:" + target
		}
		return u
	}
	type item struct {
		target string
		depth  int
	}
	queue := []item{{"/", 0}}
	seen := map[string]bool{"/": true}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		p, ok := s.lookup(it.target, it.target)
		f := Fact{URL: urlOf(it.target), Target: it.target, Depth: it.depth, Outcome: Fetched, Status: http.StatusOK}
		switch {
		case !ok || p.kind == kindMissing:
			f.Status = http.StatusNotFound
		case p.kind == kindDisallowed:
			f.Outcome, f.Status = Disallowed, 0
		case p.kind == kindBroken:
			f.Outcome, f.Status, f.Failures = Failed, http.StatusInternalServerError, e.MinAttempts
		case p.kind == kindThrottle || p.kind == kindUnavail:
			f.Refusals = s.opts.ThrottleFirst
		case p.kind == kindFlap:
			f.Failures = s.opts.FlapFailures
		case p.kind == kindRedirect:
			f.Status = p.status
		}
		if ok && f.Outcome == Fetched && f.Status == http.StatusOK && p.kind != kindText && p.kind != kindPDF {
			f.Title = p.title
		}
		f.LinksFollow = ok && f.Outcome == Fetched && it.depth < maxDepth &&
			(f.Status == http.StatusOK || p.kind == kindRedirect) && p.kind != kindText && p.kind != kindPDF
		e.Pages[f.URL] = f
		e.count(f, p, ok)
		if !f.LinksFollow {
			continue
		}
		for _, l := range p.links {
			switch {
			case strings.HasPrefix(l.target, "/"):
				if !seen[l.target] {
					seen[l.target] = true
					queue = append(queue, item{l.target, it.depth + 1})
				}
			case strings.HasPrefix(l.target, "http://") || strings.HasPrefix(l.target, "https://"):
				if u, err := crawl.Normalize(l.target); err == nil && !slices.Contains(e.OffSite, u) {
					e.OffSite = append(e.OffSite, u)
				}
			}
		}
	}
	for _, t := range unreachable {
		e.Unreachable = append(e.Unreachable, urlOf(t))
	}
	return e, nil
}

// count adds one page to the totals.
func (e *Expected) count(f Fact, p *page, ok bool) {
	switch f.Outcome {
	case Disallowed:
		e.Disallowed++
		return
	case Failed:
		e.Failed++
	case Fetched:
		e.Fetched++
	}
	e.Statuses[f.Status]++
	e.Requests += 1 + f.Refusals + f.Failures
	if f.Outcome == Failed {
		e.Requests-- // Failures already counts every attempt
	}
	switch {
	case f.Status == http.StatusNotFound:
		e.NotFound++
	case f.Status >= 300 && f.Status < 400:
		e.Redirects++
	}
	if f.Refusals > 0 {
		e.Throttled++
	}
	if f.Failures > 0 && f.Outcome == Fetched {
		e.Flapping++
	}
	if ok && strings.HasPrefix(p.path, calendarPrefix) {
		e.Calendar++
	}
}

// URLs returns the URLs of the pages with the given outcome (all pages
// when none is given), sorted.
func (e Expected) URLs(outcomes ...Outcome) []string {
	var out []string
	for u, f := range e.Pages {
		if len(outcomes) == 0 || slices.Contains(outcomes, f.Outcome) {
			out = append(out, u)
		}
	}
	slices.Sort(out)
	return out
}
