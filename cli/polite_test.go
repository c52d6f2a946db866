package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// politeSite is a local site that records when each request started and
// ended: pages /p/0 (linking to /p/1 ... /p/N-1) and the others, each
// answered after a pause, and robots.txt.
type politeSite struct {
	srv    *httptest.Server
	robots string // robots.txt body

	mu       sync.Mutex
	starts   []time.Time // page request starts, in order
	ends     []time.Time
	inFlight int
	maxIn    int
	robotsN  int
}

func newPoliteSite(t *testing.T, pages int, pause time.Duration, robots string) *politeSite {
	s := &politeSite{robots: robots}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			s.mu.Lock()
			s.robotsN++
			s.mu.Unlock()
			fmt.Fprint(w, s.robots)
			return
		}
		if !strings.HasPrefix(r.URL.Path, "/p/") {
			http.NotFound(w, r)
			return
		}
		s.mu.Lock()
		s.starts = append(s.starts, time.Now())
		s.inFlight++
		s.maxIn = max(s.maxIn, s.inFlight)
		s.mu.Unlock()
		time.Sleep(pause) // the site is slow: what a fetch costs it
		w.Header().Set("Content-Type", "text/html")
		var b strings.Builder
		b.WriteString("<html><body>")
		if r.URL.Path == "/p/0" {
			for i := 1; i < pages; i++ {
				fmt.Fprintf(&b, `<a href="/p/%d">%d</a>`, i, i)
			}
		}
		b.WriteString("</body></html>")
		w.Write([]byte(b.String()))
		s.mu.Lock()
		s.inFlight--
		s.ends = append(s.ends, time.Now())
		s.mu.Unlock()
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// record returns what the site saw: page request starts and ends (sorted),
// the most requests in flight at once and the robots.txt fetches.
func (s *politeSite) record() (starts, ends []time.Time, maxIn, robots int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	starts, ends = slices.Clone(s.starts), slices.Clone(s.ends)
	slices.SortFunc(starts, time.Time.Compare)
	slices.SortFunc(ends, time.Time.Compare)
	return starts, ends, s.maxIn, s.robotsN
}

// minGap is the shortest time between two request starts.
func minGap(starts []time.Time) time.Duration {
	gap := time.Duration(1 << 62)
	for i := 1; i < len(starts); i++ {
		gap = min(gap, starts[i].Sub(starts[i-1]))
	}
	return gap
}

// politeFleet starts serve with the given politeness flags and workers
// crawl workers of slots slots each; it returns the peers and admin
// endpoints.
func politeFleet(t *testing.T, workers, slots int, flags ...string) (peers, adminEP string) {
	t.Helper()
	args := append([]string{"serve", "--store", "memory", "--bind", "tcp://127.0.0.1:0", "--admin", "tcp://127.0.0.1:0",
		"--events", "tcp://127.0.0.1:0", "--metrics", "", "--heartbeat-interval", "1s"}, flags...)
	_, out := start(t, args...)
	at := listening(t, out, "peers", "admin")
	for i := range workers {
		start(t, "worker", "--connect", at["peers"], "--slots", fmt.Sprint(slots), "--id", fmt.Sprintf("polite-%d", i), "--heartbeat-interval", "1s")
	}
	eventually(t, "workers registered", 30*time.Second, func() bool {
		tot, _, ok := statusJSON(t, at["admin"])
		return ok && tot.WorkersIdle == workers
	})
	return at["peers"], at["admin"]
}

// settle waits until the coordinator has nothing queued or running and
// n jobs finished.
func settle(t *testing.T, adminEP string, n int, d time.Duration) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d jobs finished", n), d, func() bool {
		tot, _, ok := statusJSON(t, adminEP)
		return ok && tot.Queued+tot.Dispatched+tot.Backoff == 0 && tot.Done+tot.Failed >= n
	})
}

// TestFleetPoliteness: four workers with four slots each and coordinator
// limits of 1 per host and 200 ms: the site (on loopback: explicit limits
// apply to it) sees at most one request in flight and no two request
// starts closer than 190 ms, and robots.txt at most once for the fleet; the
// coordinator shows the host waiting for politeness meanwhile.
func TestFleetPoliteness(t *testing.T) {
	const pages = 12
	site := newPoliteSite(t, pages, 100*time.Millisecond, "User-agent: *\nDisallow: /private/\n")
	peers, adminEP := politeFleet(t, 4, 4, "--crawl-per-host", "1", "--crawl-min-delay", "200ms")
	if out, code := run(t, "", "submit", "--connect", peers, site.srv.URL+"/p/0"); code != 0 {
		t.Fatalf("submit: exit %d, %s", code, out)
	}
	eventually(t, "the host shown waiting for politeness", 60*time.Second, func() bool {
		tot, _, ok := statusJSON(t, adminEP)
		return ok && tot.Polite > 0
	})
	out, code := run(t, "", "status", "--connect", adminEP)
	if code != 0 || !strings.Contains(out, "polite") {
		t.Errorf("status during the crawl: exit %d\n%s\nwant the polite count", code, out)
	}
	settle(t, adminEP, pages, 120*time.Second)
	starts, _, maxIn, robots := site.record()
	if len(starts) != pages {
		t.Fatalf("%d page requests, want %d", len(starts), pages)
	}
	if maxIn != 1 {
		t.Errorf("%d requests in flight at once, want at most 1 (--crawl-per-host 1)", maxIn)
	}
	if g := minGap(starts); g < 190*time.Millisecond {
		t.Errorf("two request starts %v apart, want at least 190ms (--crawl-min-delay 200ms)", g)
	}
	// One worker fetched robots.txt and reported it; the others were sent
	// the coordinator's copy with their jobs.
	if robots > 1 {
		t.Errorf("robots.txt fetched %d times by the fleet, want at most once", robots)
	}
}

// TestFleetCrawlDelay: a site's robots.txt says Crawl-delay: 1. One worker
// reads it; the coordinator then spaces every worker's requests to the
// site a second apart (its own interval is 0), and no other worker fetches
// robots.txt.
func TestFleetCrawlDelay(t *testing.T) {
	const pages = 5
	site := newPoliteSite(t, pages, 20*time.Millisecond, "User-agent: *\nCrawl-delay: 1\n")
	peers, adminEP := politeFleet(t, 4, 4, "--crawl-per-host", "1", "--crawl-min-delay", "0s")
	if out, code := run(t, "", "submit", "--connect", peers, site.srv.URL+"/p/0"); code != 0 {
		t.Fatalf("submit: exit %d, %s", code, out)
	}
	settle(t, adminEP, pages, 120*time.Second)
	starts, _, _, robots := site.record()
	if len(starts) != pages {
		t.Fatalf("%d page requests, want %d", len(starts), pages)
	}
	if g := minGap(starts); g < 950*time.Millisecond {
		t.Errorf("two request starts %v apart, want at least 1s (the site's Crawl-delay, for the whole fleet)", g)
	}
	if robots != 1 {
		t.Errorf("robots.txt fetched %d times by the fleet, want once", robots)
	}
}

// TestFleetPolitenessHostsApart: two sites crawled at once by the same
// fleet each keep their own limits, and their limits do not add up into
// one queue: their requests interleave, each site's at most one at a time
// and 200 ms apart.
func TestFleetPolitenessHostsApart(t *testing.T) {
	const pages = 10
	a := newPoliteSite(t, pages, 50*time.Millisecond, "")
	b := newPoliteSite(t, pages, 50*time.Millisecond, "")
	peers, adminEP := politeFleet(t, 4, 4, "--crawl-per-host", "1", "--crawl-min-delay", "200ms")
	if out, code := run(t, "", "submit", "--connect", peers, a.srv.URL+"/p/0", b.srv.URL+"/p/0"); code != 0 {
		t.Fatalf("submit: exit %d, %s", code, out)
	}
	settle(t, adminEP, 2*pages, 120*time.Second)
	sa, ea, maxA, _ := a.record()
	sb, eb, maxB, _ := b.record()
	for _, s := range []struct {
		name   string
		starts []time.Time
		maxIn  int
	}{{"a", sa, maxA}, {"b", sb, maxB}} {
		if len(s.starts) != pages || s.maxIn != 1 || minGap(s.starts) < 190*time.Millisecond {
			t.Errorf("site %s: %d requests, %d at once, closest starts %v apart; want %d, 1, at least 190ms", s.name, len(s.starts), s.maxIn, minGap(s.starts), pages)
		}
	}
	// Interleaved: each site's second request starts before the other's
	// last one ends, so neither waited for the other to finish.
	if !sb[1].Before(ea[len(ea)-1]) || !sa[1].Before(eb[len(eb)-1]) {
		t.Errorf("the sites were crawled one after the other, want at once: a %v..%v, b %v..%v", sa[0], ea[len(ea)-1], sb[0], eb[len(eb)-1])
	}
	first, last := sa[0], ea[len(ea)-1]
	if sb[0].Before(first) {
		first = sb[0]
	}
	if eb[len(eb)-1].After(last) {
		last = eb[len(eb)-1]
	}
	t.Logf("site a took %v, site b %v, both %v", ea[len(ea)-1].Sub(sa[0]), eb[len(eb)-1].Sub(sb[0]), last.Sub(first))
}

// TestFleetPolitenessManyHosts: six workers and nine sites, one large and
// eight small: every site keeps the limits (1 at once, 100 ms apart), and
// no host starves: every small site is done before the large one's last
// request starts.
func TestFleetPolitenessManyHosts(t *testing.T) {
	big := newPoliteSite(t, 40, 20*time.Millisecond, "")
	var small []*politeSite
	for range 8 {
		small = append(small, newPoliteSite(t, 5, 20*time.Millisecond, ""))
	}
	peers, adminEP := politeFleet(t, 6, 3, "--crawl-per-host", "1", "--crawl-min-delay", "100ms")
	if out, code := run(t, "", "submit", "--connect", peers, big.srv.URL+"/p/0"); code != 0 {
		t.Fatalf("submit: exit %d, %s", code, out)
	}
	eventually(t, "the large site under way", 60*time.Second, func() bool {
		s, _, _, _ := big.record()
		return len(s) >= 2
	})
	seeds := []string{"submit", "--connect", peers}
	for _, s := range small {
		seeds = append(seeds, s.srv.URL+"/p/0")
	}
	if out, code := run(t, "", seeds...); code != 0 {
		t.Fatalf("submit: exit %d, %s", code, out)
	}
	settle(t, adminEP, 40+8*5, 180*time.Second)
	bs, _, bmax, _ := big.record()
	if len(bs) != 40 || bmax != 1 || minGap(bs) < 90*time.Millisecond {
		t.Errorf("large site: %d requests, %d at once, closest %v apart; want 40, 1, at least 90ms", len(bs), bmax, minGap(bs))
	}
	for i, s := range small {
		ss, se, smax, _ := s.record()
		switch {
		case len(ss) != 5 || smax != 1 || minGap(ss) < 90*time.Millisecond:
			t.Errorf("small site %d: %d requests, %d at once, closest %v apart; want 5, 1, at least 90ms", i, len(ss), smax, minGap(ss))
		case !se[len(se)-1].Before(bs[len(bs)-1]):
			t.Errorf("small site %d finished at %v, after the large site's last request at %v: it waited behind the large site", i, se[len(se)-1], bs[len(bs)-1])
		}
	}
}
