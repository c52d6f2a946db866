package crawl

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// gate is a handler that announces each page request on arrived and holds
// it until the test sends on release (or the test ends), tracking the most
// requests it held at once. robots.txt is answered 404 at once, unless
// robots is set.
type gate struct {
	arrived chan string
	release chan struct{}
	quit    chan struct{} // closed when the test ends, so a failing test cannot hang
	robots  string

	mu          sync.Mutex
	inflight    int
	maxInflight int
}

// newGate serves a gate with the given robots.txt on 127.0.0.1 for the
// test.
func newGate(t *testing.T, robots string) (*gate, *httptest.Server) {
	g := &gate{robots: robots, arrived: make(chan string, 64), release: make(chan struct{}), quit: make(chan struct{})}
	srv := newServer(t, g)
	t.Cleanup(func() { close(g.quit) }) // runs before the server's Close
	return g, srv
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/robots.txt" {
		if g.robots == "" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, g.robots)
		return
	}
	g.mu.Lock()
	g.inflight++
	g.maxInflight = max(g.maxInflight, g.inflight)
	g.mu.Unlock()
	g.arrived <- r.URL.Path
	select {
	case <-g.release:
	case <-g.quit:
	}
	g.mu.Lock()
	g.inflight--
	g.mu.Unlock()
	fmt.Fprint(w, "ok")
}

func (g *gate) max() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.maxInflight
}

// waitArrival returns the path of the next request to reach the gate.
func (g *gate) waitArrival(t *testing.T) string {
	t.Helper()
	select {
	case p := <-g.arrived:
		return p
	case <-time.After(5 * time.Second):
		t.Fatal("no request arrived within 5s")
		return ""
	}
}

func TestPerHostConcurrencyLimit(t *testing.T) {
	for _, perHost := range []int{1, 2, 3} {
		t.Run(fmt.Sprint(perHost), func(t *testing.T) {
			g, srv := newGate(t, "")
			cfg := testConfig()
			cfg.PerHost = perHost
			f := newFetcher(t, cfg)
			const n = 8
			done := make(chan Page, n)
			for i := range n {
				go func() { done <- f.Fetch(context.Background(), fmt.Sprintf("%s/p%d", srv.URL, i)) }()
			}
			for range perHost {
				g.waitArrival(t)
			}
			h := f.hostFor(strings.TrimPrefix(srv.URL, "http://"))
			f.hostDone(h)
			if len(h.slots) != perHost || cap(h.slots) != perHost {
				t.Fatalf("slots in use %d of %d, want %d of %d", len(h.slots), cap(h.slots), perHost, perHost)
			}
			for i := range n {
				g.release <- struct{}{}
				if i+perHost < n {
					g.waitArrival(t)
				}
			}
			for range n {
				if p := <-done; p.Outcome != OK {
					t.Errorf("got %v", p)
				}
			}
			if m := g.max(); m != perHost {
				t.Errorf("the server saw %d concurrent requests, want at most (and at best) %d", m, perHost)
			}
		})
	}
}

func TestHostsDoNotShareSlots(t *testing.T) {
	g, busy := newGate(t, "")
	other := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	cfg := testConfig()
	cfg.PerHost = 1
	f := newFetcher(t, cfg)
	done := make(chan Page, 1)
	go func() { done <- f.Fetch(context.Background(), busy.URL+"/held") }()
	g.waitArrival(t)
	if p := f.Fetch(context.Background(), other.URL+"/free"); p.Outcome != OK || p.Status != 200 {
		t.Errorf("a busy host blocked another: %v", p)
	}
	g.release <- struct{}{}
	<-done
}

func TestMinDelaySpacesFetchStarts(t *testing.T) {
	clock := newFakeClock()
	g, srv := newGate(t, "")
	close(g.release) // no holding: this test is about start times
	cfg := testConfig()
	cfg.PerHost = 2
	cfg.MinDelay = time.Second
	f := newFetcher(t, cfg, WithClock(clock))
	ctx := context.Background()

	if p := f.Fetch(ctx, srv.URL+"/a"); p.Outcome != OK {
		t.Fatalf("first fetch: %v", p)
	}
	g.waitArrival(t)
	done := make(chan Page, 2)
	go func() { done <- f.Fetch(ctx, srv.URL+"/b") }()
	if d := clock.waitTimer(t); d != time.Second {
		t.Fatalf("second fetch waits %v, want 1s", d)
	}
	go func() { done <- f.Fetch(ctx, srv.URL+"/c") }()
	if d := clock.waitTimer(t); d != 2*time.Second {
		t.Fatalf("third fetch waits %v, want 2s (its start is reserved after the second's)", d)
	}
	clock.Advance(999 * time.Millisecond)
	if n := clock.pending(); n != 2 {
		t.Fatalf("%d fetches waiting after 999ms, want 2", n)
	}
	select {
	case p := <-g.arrived:
		t.Fatalf("%s reached the server before its delay", p)
	default:
	}
	clock.Advance(time.Millisecond)
	if p := g.waitArrival(t); p != "/b" {
		t.Errorf("after 1s %s arrived, want /b", p)
	}
	<-done
	clock.Advance(time.Second)
	if p := g.waitArrival(t); p != "/c" {
		t.Errorf("after 2s %s arrived, want /c", p)
	}
	<-done
}

func TestCrawlDelay(t *testing.T) {
	tests := []struct {
		name     string
		robots   string
		minDelay time.Duration
		maxCrawl time.Duration
		want     time.Duration
	}{
		{"crawl-delay above min delay", "User-agent: *\nCrawl-delay: 5\n", time.Second, time.Minute, 5 * time.Second},
		{"min delay above crawl-delay", "User-agent: *\nCrawl-delay: 0.5\n", time.Second, time.Minute, time.Second},
		{"crawl-delay capped", "User-agent: *\nCrawl-delay: 3600\n", 0, 30 * time.Second, 30 * time.Second},
		{"other agent's crawl-delay ignored", "User-agent: slowbot\nCrawl-delay: 60\n", 2 * time.Second, time.Minute, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			g, srv := newGate(t, tt.robots)
			close(g.release)
			cfg := testConfig()
			cfg.MinDelay, cfg.MaxCrawlDelay = tt.minDelay, tt.maxCrawl
			f := newFetcher(t, cfg, WithClock(clock))
			f.Fetch(context.Background(), srv.URL+"/a")
			done := make(chan Page, 1)
			go func() { done <- f.Fetch(context.Background(), srv.URL+"/b") }()
			if d := clock.waitTimer(t); d != tt.want {
				t.Errorf("second fetch waits %v, want %v", d, tt.want)
			}
			clock.Advance(tt.want)
			if p := <-done; p.Outcome != OK {
				t.Errorf("second fetch: %v", p)
			}
		})
	}
}

func TestPolitenessWaitsHonourContext(t *testing.T) {
	clock := newFakeClock()
	g, srv := newGate(t, "")
	cfg := testConfig()
	cfg.PerHost = 1
	cfg.MinDelay = 10 * time.Second
	f := newFetcher(t, cfg, WithClock(clock))

	// A holds the only slot; B gives up waiting for it.
	held := make(chan Page, 1)
	go func() { held <- f.Fetch(context.Background(), srv.URL+"/a") }()
	g.waitArrival(t)
	ctx, cancel := context.WithCancel(context.Background())
	waiting := make(chan Page, 1)
	go func() { waiting <- f.Fetch(ctx, srv.URL+"/b") }()
	cancel()
	if p := <-waiting; p.Outcome != Internal || !strings.Contains(p.Err, "slot") || !strings.Contains(p.Err, "canceled") {
		t.Errorf("cancelled while waiting for a slot: %s %q", p.Outcome, p.Err)
	}
	g.release <- struct{}{}
	<-held

	// C waits for the delay and gives up; its turn is given back, so D
	// waits only for the rest of A's delay, not for C's too.
	ctx, cancel = context.WithCancel(context.Background())
	go func() { waiting <- f.Fetch(ctx, srv.URL+"/c") }()
	if d := clock.waitTimer(t); d != 10*time.Second {
		t.Fatalf("C waits %v, want 10s", d)
	}
	cancel()
	if p := <-waiting; p.Outcome != Internal || !strings.Contains(p.Err, "politeness") {
		t.Errorf("cancelled while waiting for the delay: %s %q", p.Outcome, p.Err)
	}
	if n := clock.pending(); n != 0 {
		t.Errorf("%d timers left running after cancellation", n)
	}
	clock.Advance(4 * time.Second)
	go func() { waiting <- f.Fetch(context.Background(), srv.URL+"/d") }()
	if d := clock.waitTimer(t); d != 6*time.Second {
		t.Errorf("D waits %v, want the 6s left of A's delay", d)
	}
	clock.Advance(6 * time.Second)
	g.waitArrival(t)
	g.release <- struct{}{}
	if p := <-waiting; p.Outcome != OK {
		t.Errorf("D: %v", p)
	}
}

func TestHostAndRobotsTablesArePruned(t *testing.T) {
	clock := newFakeClock()
	f := newFetcher(t, testConfig(), WithClock(clock))
	f.mu.Lock()
	for i := range pruneFloor {
		f.hosts[fmt.Sprintf("idle-%d", i)] = &hostState{slots: make(chan struct{}, 1)}
	}
	f.hosts["busy"] = &hostState{slots: make(chan struct{}, 1), users: 1}
	f.hosts["delayed"] = &hostState{slots: make(chan struct{}, 1), next: clock.Now().Add(time.Second)}
	f.mu.Unlock()

	h := f.hostFor("new")
	f.hostDone(h)
	f.mu.Lock()
	if len(f.hosts) != 3 || f.hosts["busy"] == nil || f.hosts["delayed"] == nil || f.hosts["new"] == nil {
		t.Errorf("after pruning %d hosts remain, want busy, delayed and new", len(f.hosts))
	}
	if f.pruneHostsAt != pruneFloor {
		t.Errorf("next prune at %d, want %d", f.pruneHostsAt, pruneFloor)
	}
	for i := range pruneFloor {
		f.robots[fmt.Sprintf("http://old-%d", i)] = &robotsEntry{rules: &Robots{}, expires: clock.Now()}
	}
	f.robots["http://fresh"] = &robotsEntry{rules: &Robots{}, expires: clock.Now().Add(time.Hour)}
	f.mu.Unlock()

	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	if p := f.Fetch(context.Background(), srv.URL+"/"); p.Outcome != OK {
		t.Fatalf("fetch: %v", p)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.robots) != 2 || f.robots["http://fresh"] == nil || f.robots[srv.URL] == nil {
		t.Errorf("after pruning %d robots entries remain, want fresh and the new one", len(f.robots))
	}
}
