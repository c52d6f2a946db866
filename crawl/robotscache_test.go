package crawl

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// robotsSite serves a robots.txt the test can change and an HTML page for
// every other path, counting requests per path.
type robotsSite struct {
	mu     sync.Mutex
	status int
	header map[string]string
	body   string
	hits   map[string]int
}

func newRobotsSite(status int, body string) *robotsSite {
	return &robotsSite{status: status, body: body, hits: map[string]int{}}
}

func (s *robotsSite) set(status int, body string, header map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.body, s.header = status, body, header
}

func (s *robotsSite) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

func (s *robotsSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.hits[r.URL.RequestURI()]++
	status, body, header := s.status, s.body, s.header
	s.mu.Unlock()
	if r.URL.Path == "/robots.txt" {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
		return
	}
	w.Header().Set("Content-Type", "text/html")
	fmt.Fprintf(w, "<title>%s</title>", r.URL.Path)
}

func TestRobotsHonouredAndFetchedOnce(t *testing.T) {
	site := newRobotsSite(200, "User-agent: *\nDisallow: /private/\nAllow: /private/open\n\nUser-agent: drover\nDisallow: /private/\nAllow: /private/open\nDisallow: /*.pdf$\n")
	srv := newServer(t, site)
	cfg := testConfig()
	cfg.PerHost = 4
	f := newFetcher(t, cfg)
	paths := []string{"/a", "/private/x", "/private/open", "/b.pdf", "/b.pdf?x", "/c", "/robots.txt", "/private/"}
	disallowed := map[string]bool{"/private/x": true, "/b.pdf": true, "/private/": true}
	var wg sync.WaitGroup
	pages := make([]Page, len(paths)*3)
	for i := range pages {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pages[i] = f.Fetch(context.Background(), srv.URL+paths[i%len(paths)])
		}()
	}
	wg.Wait()
	for i, p := range pages {
		path := paths[i%len(paths)]
		if disallowed[path] {
			if !p.Disallowed || p.Outcome != OK || p.Status != 0 || p.Err != ErrDisallowed {
				t.Errorf("%s: got %+v, want disallowed", path, p)
			}
			if n := site.count(path); n != 0 {
				t.Errorf("%s is disallowed but was requested %d times", path, n)
			}
			continue
		}
		if p.Disallowed || p.Outcome != OK || p.Status != 200 {
			t.Errorf("%s: got %s %d %q, want fetched", path, p.Outcome, p.Status, p.Err)
		}
	}
	if n := site.count("/robots.txt"); n != 1+3 { // once for the rules, 3 times as a page
		t.Errorf("robots.txt requested %d times, want 4 (1 for the rules + 3 as a page)", n)
	}
}

func TestRobotsProductTokenSelectsGroup(t *testing.T) {
	site := newRobotsSite(200, "User-agent: mybot\nDisallow: /\n\nUser-agent: *\nAllow: /\n")
	srv := newServer(t, site)
	for _, tt := range []struct {
		agent      string
		disallowed bool
	}{{"MyBot/2.0 (+https://example.com)", true}, {"otherbot/1", false}} {
		cfg := testConfig()
		cfg.UserAgent = tt.agent
		p := newFetcher(t, cfg).Fetch(context.Background(), srv.URL+"/x")
		if p.Disallowed != tt.disallowed {
			t.Errorf("agent %q: Disallowed = %v, want %v", tt.agent, p.Disallowed, tt.disallowed)
		}
	}
}

func TestRobotsCacheExpires(t *testing.T) {
	clock := newFakeClock()
	site := newRobotsSite(200, "User-agent: *\nDisallow: /x\n")
	srv := newServer(t, site)
	cfg := testConfig()
	cfg.RobotsTTL = time.Hour
	f := newFetcher(t, cfg, WithClock(clock))
	if p := f.Fetch(context.Background(), srv.URL+"/x"); !p.Disallowed {
		t.Fatalf("first fetch: %+v, want disallowed", p)
	}
	site.set(200, "User-agent: *\nDisallow: /y\n", nil)
	clock.Advance(time.Hour - time.Second)
	if p := f.Fetch(context.Background(), srv.URL+"/x"); !p.Disallowed {
		t.Errorf("within the TTL the cached rules must apply: %+v", p)
	}
	clock.Advance(time.Second)
	if p := f.Fetch(context.Background(), srv.URL+"/x"); p.Disallowed || p.Status != 200 {
		t.Errorf("after the TTL the new rules must apply: %+v", p)
	}
	if n := site.count("/robots.txt"); n != 2 {
		t.Errorf("robots.txt fetched %d times, want 2", n)
	}
}

func TestRobotsClientErrorAllowsAll(t *testing.T) {
	for _, status := range []int{401, 403, 404, 410} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			site := newRobotsSite(status, "User-agent: *\nDisallow: /\n")
			srv := newServer(t, site)
			p := newFetcher(t, testConfig()).Fetch(context.Background(), srv.URL+"/page")
			if p.Outcome != OK || p.Status != 200 || p.Disallowed {
				t.Errorf("robots.txt %d: got %s %d %q, want the page fetched", status, p.Outcome, p.Status, p.Err)
			}
		})
	}
}

func TestRobotsServerErrorDisallowsForAWhile(t *testing.T) {
	clock := newFakeClock()
	site := newRobotsSite(500, "")
	srv := newServer(t, site)
	f := newFetcher(t, testConfig(), WithClock(clock))
	fetch := func() Page { return f.Fetch(context.Background(), srv.URL+"/page") }

	p := fetch()
	if p.Outcome != Throttled || p.RetryAfter != robotsRetry || !strings.Contains(p.Err, "robots.txt") {
		t.Fatalf("robots.txt 500: got %s retry %v %q, want throttled for %v", p.Outcome, p.RetryAfter, p.Err, robotsRetry)
	}
	clock.Advance(20 * time.Second)
	if p := fetch(); p.Outcome != Throttled || p.RetryAfter != robotsRetry-20*time.Second {
		t.Errorf("within the while: got %s retry %v, want throttled for the rest", p.Outcome, p.RetryAfter)
	}
	if n := site.count("/robots.txt"); n != 1 {
		t.Errorf("robots.txt fetched %d times within the while, want 1", n)
	}
	if n := site.count("/page"); n != 0 {
		t.Errorf("the page was fetched %d times while robots.txt was unreachable", n)
	}
	// 503 with a longer Retry-After: the while is the server's.
	site.set(503, "", map[string]string{"Retry-After": "300"})
	clock.Advance(robotsRetry)
	if p := fetch(); p.Outcome != Throttled || p.RetryAfter != 5*time.Minute {
		t.Errorf("robots.txt 503 Retry-After 300: got %s retry %v", p.Outcome, p.RetryAfter)
	}
	// The third refusal in a row gives up: Internal.
	site.set(429, "", nil)
	clock.Advance(5 * time.Minute)
	if p := fetch(); p.Outcome != Internal || !strings.Contains(p.Err, "3 times") {
		t.Errorf("third refusal: got %s %q, want internal", p.Outcome, p.Err)
	}
	// Recovery.
	site.set(200, "User-agent: *\nDisallow: /other\n", nil)
	clock.Advance(robotsRetry)
	if p := fetch(); p.Outcome != OK || p.Status != 200 {
		t.Errorf("after recovery: got %s %d %q, want the page", p.Outcome, p.Status, p.Err)
	}
	if n := site.count("/robots.txt"); n != 4 {
		t.Errorf("robots.txt fetched %d times, want 4", n)
	}
}

func TestRobotsNetworkErrorIsInternalAndNotCached(t *testing.T) {
	var broken atomic.Bool
	broken.Store(true)
	site := newRobotsSite(200, "User-agent: *\nDisallow: /no\n")
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" && broken.Load() {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close() // the client sees the connection drop
			}
			return
		}
		site.ServeHTTP(w, r)
	}))
	f := newFetcher(t, testConfig())
	p := f.Fetch(context.Background(), srv.URL+"/page")
	if p.Outcome != Internal || !strings.Contains(p.Err, "robots.txt") {
		t.Fatalf("robots.txt connection dropped: got %s %q, want internal", p.Outcome, p.Err)
	}
	broken.Store(false)
	if p := f.Fetch(context.Background(), srv.URL+"/page"); p.Outcome != OK || p.Status != 200 {
		t.Errorf("next attempt: got %s %d %q, want the page (network errors are not cached)", p.Outcome, p.Status, p.Err)
	}
	if p := f.Fetch(context.Background(), srv.URL+"/no"); !p.Disallowed {
		t.Errorf("rules fetched on the second attempt were not applied: %+v", p)
	}
}

func TestRobotsRedirects(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/real-robots.txt", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/real-robots.txt", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "User-agent: *\nDisallow: /x\n")
	})
	srv := newServer(t, mux)
	if p := newFetcher(t, testConfig()).Fetch(context.Background(), srv.URL+"/x"); !p.Disallowed {
		t.Errorf("rules behind a robots.txt redirect not applied: %+v", p)
	}

	loop := http.NewServeMux()
	loop.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.Redirect(w, r, "/robots.txt", http.StatusFound)
			return
		}
		fmt.Fprint(w, "hello")
	})
	srv2 := newServer(t, loop)
	if p := newFetcher(t, testConfig()).Fetch(context.Background(), srv2.URL+"/x"); p.Outcome != OK || p.Status != 200 {
		t.Errorf("robots.txt redirect loop must allow all: %s %d %q", p.Outcome, p.Status, p.Err)
	}
}

func TestRobotsWaitHonoursContext(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			arrived <- struct{}{}
			<-release
			w.WriteHeader(404)
			return
		}
		fmt.Fprint(w, "page")
	}))
	defer close(release)
	f := newFetcher(t, testConfig())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Page)
	go func() { done <- f.Fetch(ctx, srv.URL+"/a") }()
	<-arrived
	cancel()
	p := <-done
	if p.Outcome != Internal || !strings.Contains(p.Err, "robots.txt") || !strings.Contains(p.Err, "canceled") {
		t.Errorf("cancelled while waiting for robots.txt: got %s %q", p.Outcome, p.Err)
	}
}
