package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"drover/store/redis/redistest"
)

// TestPolitenessAcrossCoordinatorsOnRedis: two `drover serve --store
// redis://...` on one cluster, each with crawl workers, and coordinator
// limits of 1 per host and 200 ms. The site's pages, submitted half to
// each coordinator, more than one coordinator takes from the shared queue
// at once (64), run on both coordinators' workers, yet the site sees
// at most one request in flight and no two request starts closer than
// 190 ms: the host's limits hold across the coordinators, not only among
// each one's workers. Meanwhile status on either coordinator lists the
// host among the cluster's polite hosts.
func TestPolitenessAcrossCoordinatorsOnRedis(t *testing.T) {
	drover(t)
	const pages = 80
	site := newPoliteSite(t, pages, 20*time.Millisecond, "")
	cl := redistest.Start(t)
	var adm, peers [2]string
	for i := range adm {
		c := startRedisServe(t, cl.URL(), "--crawl-per-host", "1", "--crawl-min-delay", "200ms")
		adm[i], peers[i] = c.adm, c.peers
		for w := range 2 {
			c.startWorker(t, fmt.Sprintf("polite-%d-%d", i, w), 4)
		}
		c.awaitWorkers(t, 2)
	}
	submitAlternate(t, peers, site.srv.URL, pages)
	var done [2]int
	var listed [2]bool // status listed the site among the cluster's polite hosts
	host := strings.TrimPrefix(site.srv.URL, "http://")
	eventually(t, fmt.Sprintf("%d pages done over both coordinators", pages), 120*time.Second, func() bool {
		for i := range adm {
			tot, _, ok := statusJSON(t, adm[i])
			if !ok {
				return false
			}
			done[i] = tot.Done + tot.Failed
			if c := tot.Cluster; c != nil {
				for _, h := range c.PoliteHosts {
					listed[i] = listed[i] || h.Host == host && h.Polite
				}
			}
		}
		return done[0]+done[1] >= pages
	})
	starts, _, maxIn, _ := site.record()
	t.Logf("coordinators ran %d and %d pages; closest starts %v apart, %d at once", done[0], done[1], minGap(starts), maxIn)
	if len(starts) != pages {
		t.Fatalf("%d page requests, want %d", len(starts), pages)
	}
	if done[0] == 0 || done[1] == 0 {
		t.Fatalf("coordinators ran %d and %d pages; want both to run some (neither claims more than 64 at once)", done[0], done[1])
	}
	if maxIn != 1 {
		t.Errorf("%d requests in flight at once, want at most 1 across both coordinators (--crawl-per-host 1)", maxIn)
	}
	if g := minGap(starts); g < 190*time.Millisecond {
		t.Errorf("two request starts %v apart, want at least 190ms across both coordinators (--crawl-min-delay 200ms)", g)
	}
	if !listed[0] || !listed[1] {
		t.Errorf("status listed %s among the cluster's polite hosts on coordinators 0 and 1: %v; want both (the claims find it at its limits)", host, listed)
	}
}

// submitAlternate submits site/p/0 to site/p/<pages-1> to the two
// coordinators in turn: the even pages to the first, the odd ones to the
// second.
func submitAlternate(t *testing.T, peers [2]string, site string, pages int) {
	t.Helper()
	for i := range peers {
		args := []string{"submit", "--connect", peers[i]}
		for p := i; p < pages; p += 2 {
			args = append(args, fmt.Sprintf("%s/p/%d", site, p))
		}
		if out, code := run(t, "", args...); code != 0 {
			t.Fatalf("submit to coordinator %d: exit %d, %s", i, code, out)
		}
	}
}

// TestBackoffAcrossCoordinatorsOnRedis: two `drover serve --store
// redis://...` on one cluster, each with a crawl worker, and a site whose
// first page answers 429 with Retry-After: 12. The back-off holds the
// host on both coordinators: from 4s after the 429 (time for the other
// coordinator to learn of it, a second's poll on a loaded machine, and
// for fetches under way to end) until a second before its end, the site
// sees no request, and every page is fetched after it.
func TestBackoffAcrossCoordinatorsOnRedis(t *testing.T) {
	drover(t)
	const pages = 200
	const retryAfter = 12 * time.Second
	var mu sync.Mutex
	var starts []time.Time
	var throttledAt time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/p/") {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		first := throttledAt.IsZero()
		if first {
			throttledAt = time.Now()
		} else {
			starts = append(starts, time.Now())
		}
		mu.Unlock()
		if first {
			w.Header().Set("Retry-After", strconv.Itoa(int(retryAfter/time.Second)))
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		time.Sleep(300 * time.Millisecond) // a slow site: each coordinator is still busy with it during the back-off
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>page</body></html>")
	}))
	t.Cleanup(srv.Close)
	cl := redistest.Start(t)
	var adm, peers [2]string
	for i := range adm {
		c := startRedisServe(t, cl.URL())
		adm[i], peers[i] = c.adm, c.peers
		c.startWorker(t, fmt.Sprintf("backoff-%d", i), 2)
		c.awaitWorkers(t, 1)
	}
	submitAlternate(t, peers, srv.URL, pages)
	var done [2]int
	eventually(t, fmt.Sprintf("%d pages done over both coordinators", pages), 180*time.Second, func() bool {
		for i := range adm {
			tot, _, ok := statusJSON(t, adm[i])
			if !ok {
				return false
			}
			done[i] = tot.Done + tot.Failed
		}
		return done[0]+done[1] >= pages
	})
	mu.Lock()
	defer mu.Unlock()
	from, to := throttledAt.Add(4*time.Second), throttledAt.Add(retryAfter-time.Second)
	var during, after int
	for _, s := range starts {
		switch {
		case s.After(from) && s.Before(to):
			during++
		case !s.Before(to):
			after++
		}
	}
	t.Logf("coordinators ran %d and %d pages; %d requests from 4s to 11s after the 429, %d after", done[0], done[1], during, after)
	if during != 0 {
		t.Errorf("%d requests from 4s to 11s after a 429 with Retry-After: 12; want none on either coordinator (the back-off is the cluster's)", during)
	}
	if after == 0 {
		t.Errorf("no request after the back-off; want the pages fetched then")
	}
}
