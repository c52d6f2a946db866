package crawl

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"testing"
	"time"
)

func TestIsLocalAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1": true, "127.9.9.9": true, "::1": true, "10.1.2.3": true, "172.16.0.1": true,
		"192.168.1.1": true, "fd12::1": true, "169.254.1.1": true, "fe80::1": true, "::ffff:127.0.0.1": true,
		"8.8.8.8": false, "172.32.0.1": false, "2001:db8::1": false, "1.1.1.1": false,
	} {
		if got := isLocalAddr(netip.MustParseAddr(addr)); got != want {
			t.Errorf("isLocalAddr(%s) = %v, want %v", addr, got, want)
		}
	}
}

func TestLookupLocal(t *testing.T) {
	cfg := testConfig()
	cfg.Resolve = map[string]string{"pinned.example:80": "127.0.0.1:8080", "public.example:80": "93.184.215.14:80"}
	f := newFetcher(t, cfg)
	for raw, want := range map[string]bool{
		"http://127.0.0.1:8080/": true, "http://[::1]/": true, "http://localhost:3000/": true, "http://app.localhost/": true,
		"http://10.0.0.7/": true, "http://pinned.example/": true, "http://public.example/": false, "http://8.8.8.8/": false,
		"http://does-not-resolve.invalid/": false,
	} {
		u, _ := url.Parse(raw)
		if got := f.lookupLocal(context.Background(), u); got != want {
			t.Errorf("lookupLocal(%s) = %v, want %v", raw, got, want)
		}
	}
}

// With LocalNoDelay a loopback host gets no MinDelay (a delay of an hour
// would otherwise stop the second fetch), but its robots.txt Crawl-delay
// still applies; the waits show in Politeness.
func TestLocalNoDelay(t *testing.T) {
	for _, crawlDelay := range []int{0, 3} {
		t.Run(fmt.Sprintf("crawl-delay %d", crawlDelay), func(t *testing.T) {
			clock := newFakeClock()
			robots := ""
			if crawlDelay > 0 {
				robots = fmt.Sprintf("User-agent: *\nCrawl-delay: %d\n", crawlDelay)
			}
			g, srv := newGate(t, robots)
			close(g.release)
			cfg := testConfig()
			cfg.MinDelay, cfg.LocalNoDelay = time.Hour, true
			f := newFetcher(t, cfg, WithClock(clock))
			for _, p := range []string{"/a", "/b", "/c"} {
				done := make(chan Page, 1)
				go func() { done <- f.Fetch(context.Background(), srv.URL+p) }()
				if crawlDelay > 0 && p != "/a" {
					if d := clock.waitTimer(t); d != time.Duration(crawlDelay)*time.Second {
						t.Fatalf("%s waits %v, want the Crawl-delay %ds", p, d, crawlDelay)
					}
					clock.Advance(time.Duration(crawlDelay) * time.Second)
				}
				if page := <-done; page.Outcome != OK {
					t.Fatalf("%s: %v", p, page)
				}
			}
			pol := f.Politeness()
			if crawlDelay == 0 && pol.Waits != 0 {
				t.Errorf("Politeness = %+v, want no waits", pol)
			}
			if crawlDelay > 0 && (pol.Waits != 2 || pol.Waited != 2*time.Duration(crawlDelay)*time.Second || !pol.CrawlDelay) {
				t.Errorf("Politeness = %+v, want 2 waits of the Crawl-delay", pol)
			}
		})
	}
}

// Without LocalNoDelay (an explicit delay) the local host is spaced too.
func TestLocalDelayWhenAsked(t *testing.T) {
	clock := newFakeClock()
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	cfg := testConfig()
	cfg.MinDelay = 2 * time.Second
	f := newFetcher(t, cfg, WithClock(clock))
	f.Fetch(context.Background(), srv.URL+"/a")
	done := make(chan Page, 1)
	go func() { done <- f.Fetch(context.Background(), srv.URL+"/b") }()
	if d := clock.waitTimer(t); d != 2*time.Second {
		t.Fatalf("second fetch waits %v, want 2s", d)
	}
	clock.Advance(2 * time.Second)
	<-done
	if p := f.Politeness(); p.Waits != 1 || p.Delay != 2*time.Second || p.CrawlDelay {
		t.Errorf("Politeness = %+v, want one wait of the 2s MinDelay", p)
	}
}

func TestIsLocalHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST.": true, "localhost:8080": true, "app.localhost": true,
		"127.0.0.1": true, "127.0.0.1:8080": true, "[::1]": true, "[::1]:8080": true, "::1": true,
		"10.1.2.3": true, "192.168.0.1:80": true, "[fe80::1%eth0]:80": true, "[::ffff:127.0.0.1]": true,
		"example.com": false, "example.com:80": false, "8.8.8.8": false, "[2001:db8::1]:443": false,
		"localhost.example.com": false, "": false,
	} {
		if got := IsLocalHost(host); got != want {
			t.Errorf("IsLocalHost(%q) = %v, want %v", host, got, want)
		}
	}
}
