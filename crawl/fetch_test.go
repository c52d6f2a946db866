package crawl

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// testConfig is DefaultConfig without a politeness delay.
func testConfig() Config {
	c := DefaultConfig("test")
	c.MinDelay = 0
	return c
}

// newFetcher builds a Fetcher for a test and closes it at the end.
func newFetcher(t *testing.T, cfg Config, opts ...Option) *Fetcher {
	t.Helper()
	f, err := New(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

// newServer serves h on 127.0.0.1 for the test.
func newServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestFetchOutcomes(t *testing.T) {
	clock := newFakeClock()
	var agents sync.Map
	mux := http.NewServeMux()
	html := func(status int, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			agents.Store(r.UserAgent(), true)
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(status)
			fmt.Fprint(w, body)
		}
	}
	mux.HandleFunc("/ok.html", html(200, `<title>Hi</title><a href="/a">a</a><a href="b#x">b</a><a href="mailto:x@y">m</a>`))
	mux.HandleFunc("/missing", html(404, `<title>Not here</title><a href="/nav">nav</a>`))
	mux.HandleFunc("/teapot", html(418, `short and stout`))
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ok.html#top", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/moved-away", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "HTTP://Other.TEST:80/x/../y")
		w.WriteHeader(http.StatusFound)
	})
	mux.HandleFunc("/not-modified", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotModified)
	})
	mux.HandleFunc("/busy", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	mux.HandleFunc("/busy-no-advice", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTooManyRequests)
	})
	mux.HandleFunc("/unavailable", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", clock.Now().Add(90*time.Second).UTC().Format(http.TimeFormat))
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	mux.HandleFunc("/error", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	})
	mux.HandleFunc("/bad-gateway", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
	})
	mux.HandleFunc("/data.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"html": "<a href=\"/x\">x</a>"}`)
	})
	mux.HandleFunc("/no-type", func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = nil // stop net/http from sniffing one
		fmt.Fprint(w, `<html><a href="/sniffed">x</a></html>`)
	})
	mux.HandleFunc("/big.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<a href="/early">e</a>`)
		fmt.Fprint(w, strings.Repeat("<p>filler</p>", 200))
		fmt.Fprint(w, `<a href="/late">l</a>`)
	})
	mux.HandleFunc("/latin1.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=iso-8859-1")
		w.Write([]byte("<title>caf\xe9</title>"))
	})
	mux.HandleFunc("/meta-charset.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<meta charset=\"windows-1252\"><title>na\xefve</title>"))
	})
	srv := newServer(t, mux)

	cfg := testConfig()
	cfg.MaxBodyBytes = 1024
	f := newFetcher(t, cfg, WithClock(clock))
	u := srv.URL
	tests := []struct {
		path      string
		outcome   Outcome
		status    int
		finalURL  string
		title     string
		links     []string
		retry     time.Duration
		truncated bool
		errHas    string
	}{
		{path: "/ok.html", outcome: OK, status: 200, title: "Hi", links: []string{u + "/a", u + "/b"}},
		{path: "/missing", outcome: OK, status: 404},
		{path: "/teapot", outcome: OK, status: 418},
		{path: "/moved", outcome: OK, status: 301, finalURL: u + "/ok.html", links: []string{u + "/ok.html"}},
		{path: "/moved-away", outcome: OK, status: 302, finalURL: "http://other.test/y", links: []string{"http://other.test/y"}},
		{path: "/not-modified", outcome: OK, status: 304},
		{path: "/busy", outcome: Throttled, status: 429, retry: 7 * time.Second, errHas: "429"},
		{path: "/busy-no-advice", outcome: Throttled, status: 429},
		{path: "/unavailable", outcome: Throttled, status: 503, retry: 90 * time.Second},
		{path: "/error", outcome: Internal, status: 500, errHas: "500"},
		{path: "/bad-gateway", outcome: Internal, status: 502, errHas: "502"},
		{path: "/data.json", outcome: OK, status: 200},
		{path: "/no-type", outcome: OK, status: 200},
		{path: "/big.html", outcome: OK, status: 200, links: []string{u + "/early"}, truncated: true},
		{path: "/latin1.html", outcome: OK, status: 200, title: "café"},
		{path: "/meta-charset.html", outcome: OK, status: 200, title: "naïve"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			p := f.Fetch(context.Background(), u+tt.path+"#frag")
			if p.Outcome != tt.outcome || p.Status != tt.status {
				t.Fatalf("got %s %d (%s), want %s %d", p.Outcome, p.Status, p.Err, tt.outcome, tt.status)
			}
			want := tt.finalURL
			if want == "" {
				want = u + tt.path
			}
			if p.FinalURL != want {
				t.Errorf("FinalURL = %q, want %q", p.FinalURL, want)
			}
			if p.URL != u+tt.path+"#frag" {
				t.Errorf("URL = %q, want it as given", p.URL)
			}
			if p.Title != tt.title {
				t.Errorf("Title = %q, want %q", p.Title, tt.title)
			}
			if len(p.Links) != 0 || len(tt.links) != 0 {
				if !slices.Equal(p.Links, tt.links) {
					t.Errorf("Links = %q, want %q", p.Links, tt.links)
				}
			}
			if p.RetryAfter != tt.retry {
				t.Errorf("RetryAfter = %v, want %v", p.RetryAfter, tt.retry)
			}
			if p.Truncated != tt.truncated {
				t.Errorf("Truncated = %v, want %v", p.Truncated, tt.truncated)
			}
			if tt.truncated && p.Bytes != cfg.MaxBodyBytes {
				t.Errorf("Bytes = %d, want the limit %d", p.Bytes, cfg.MaxBodyBytes)
			}
			if !strings.Contains(p.Err, tt.errHas) || (tt.outcome == OK && p.Err != "") {
				t.Errorf("Err = %q, want it to mention %q", p.Err, tt.errHas)
			}
			if p.Disallowed {
				t.Error("Disallowed set without robots.txt")
			}
		})
	}
	if _, ok := agents.Load(cfg.Agent()); !ok {
		t.Errorf("the server never saw User-Agent %q", cfg.Agent())
	}
	if p := f.Fetch(context.Background(), u+"/data.json"); p.Bytes != int64(len(`{"html": "<a href=\"/x\">x</a>"}`)) {
		t.Errorf("Bytes of a non-HTML body = %d", p.Bytes)
	}
}

func TestFetchBadURLIsExternal(t *testing.T) {
	f := newFetcher(t, testConfig())
	for _, raw := range []string{"mailto:a@b.c", "http://exa mple.com/", "/relative", "", "http://h:99999/"} {
		p := f.Fetch(context.Background(), raw)
		if p.Outcome != External || p.Err == "" || p.Status != 0 {
			t.Errorf("Fetch(%q) = %s %d %q, want external with an error", raw, p.Outcome, p.Status, p.Err)
		}
	}
}

func TestFetchConnectionRefusedIsInternal(t *testing.T) {
	// A port bound and not listening refuses connections, and stays bound
	// (a port listened on, closed and taken as free may be bound by
	// something else before the fetch).
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	f := newFetcher(t, testConfig())
	p := f.Fetch(context.Background(), "http://"+addr+"/")
	if p.Outcome != Internal || p.Status != 0 || p.Err == "" {
		t.Errorf("got %s %d %q, want internal", p.Outcome, p.Status, p.Err)
	}
}

func TestFetchTimeoutIsInternal(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // until the client gives up
	})
	mux.HandleFunc("/trickle", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<title>slow</title>")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	srv := newServer(t, mux)
	cfg := testConfig()
	// The timeout must outlast the headers and the trickle's first bytes
	// on a loaded machine (150 ms could run out before them: Bytes 0).
	cfg.Timeout = time.Second
	f := newFetcher(t, cfg)
	for _, path := range []string{"/hang", "/trickle"} {
		p := f.Fetch(context.Background(), srv.URL+path)
		if p.Outcome != Internal || !strings.Contains(p.Err, "timeout") || len(p.Links) != 0 {
			t.Errorf("%s: got %s %d %q, want an internal timeout", path, p.Outcome, p.Status, p.Err)
		}
		if path == "/trickle" && p.Bytes != int64(len("<title>slow</title>")) {
			t.Errorf("%s: Bytes = %d, want the bytes read before the timeout", path, p.Bytes)
		}
	}
}

func TestFetchResolvePinsHost(t *testing.T) {
	var host string
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/page" {
			host = r.Host
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<a href="/next">n</a>`)
	}))
	cfg := testConfig()
	cfg.Resolve = map[string]string{"demo.test:80": srv.Listener.Addr().String()}
	f := newFetcher(t, cfg)
	p := f.Fetch(context.Background(), "http://DEMO.test:80/page")
	if p.Outcome != OK || p.Status != 200 {
		t.Fatalf("got %v", p)
	}
	if host != "demo.test" {
		t.Errorf("server saw Host %q, want demo.test", host)
	}
	if !slices.Equal(p.Links, []string{"http://demo.test/next"}) {
		t.Errorf("Links = %q", p.Links)
	}
}

func TestContentTypeChecks(t *testing.T) {
	tests := []struct {
		ct         string
		html, utf8 bool
	}{
		{"text/html", true, false},
		{"text/html; charset=utf-8", true, true},
		{"TEXT/HTML; Charset=\"UTF-8\"", true, true},
		{"text/html;charset=utf8", true, true},
		{"text/html; charset=iso-8859-1", true, false},
		{"application/xhtml+xml; charset=utf-8", false, true},
		{"text/plain", false, false},
		{"", false, false},
		{"text/html; charset", false, false},
		{"text/html;charset=UTF-8", true, true},
		{"text/html ; charset=utf-8", true, true},
		{"text/htmlx", false, false},
		{"text/html; charset=utf-8; x", false, false},
	}
	for _, tt := range tests {
		if html, utf8 := mediaType(tt.ct); html != tt.html || utf8 != tt.utf8 {
			t.Errorf("mediaType(%q) = %v, %v, want %v, %v", tt.ct, html, utf8, tt.html, tt.utf8)
		}
	}
}

// TestFetchKeepsConnectionsForParallelFetches: a fetcher that runs 8
// fetches to one host at once with no per-host cap of its own (drover
// crawl's local workers: the coordinator holds the cap) keeps their 8
// connections for the next fetches rather than 2 of them (net/http's
// default), which made 6 of every 8 pages dial a new connection.
func TestFetchKeepsConnectionsForParallelFetches(t *testing.T) {
	const par, rounds = 8, 10
	var (
		mu      sync.Mutex
		release chan struct{}
		dials   int
	)
	arrived := make(chan struct{}, par)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		wait := release
		mu.Unlock()
		arrived <- struct{}{}
		<-wait // all par fetches of a round are in flight at once
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<a href="/next">n</a>`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			dials++
			mu.Unlock()
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)

	run := func(t *testing.T, parallel int) int {
		cfg := testConfig()
		cfg.PerHost, cfg.Parallel = 0, parallel
		f := newFetcher(t, cfg)
		if p := f.Fetch(context.Background(), srv.URL+"/robots.txt"); p.Status != 404 {
			t.Fatalf("robots.txt: got %v", p) // fetched once, before the rounds
		}
		mu.Lock()
		dials = 0
		mu.Unlock()
		for r := range rounds {
			mu.Lock()
			release = make(chan struct{})
			mu.Unlock()
			var wg sync.WaitGroup
			for i := range par {
				wg.Go(func() {
					if p := f.Fetch(context.Background(), fmt.Sprintf("%s/p/%d-%d", srv.URL, r, i)); p.Outcome != OK || p.Status != 200 {
						t.Errorf("fetch: got %v", p)
					}
				})
			}
			for range par {
				<-arrived
			}
			close(release)
			wg.Wait()
		}
		mu.Lock()
		defer mu.Unlock()
		return dials
	}
	// Every round needs par connections at once: kept idle, the next
	// round reuses them; past 2 kept, at least par-2 are dialled again.
	if got, least := run(t, 0), (rounds-1)*(par-2); got < least {
		t.Fatalf("Parallel 0 (2 idle connections kept): %d dials, want at least %d (the test cannot tell reuse apart)", got, least)
	}
	// A connection goes back to the idle pool just after its body is
	// read, so a fetch of the next round may now and then dial before it
	// is back: a margin, far below the (rounds-1)*(par-2) of the case above.
	if got, most := run(t, par), 2*par; got > most {
		t.Errorf("Parallel %d: %d dials for %d rounds of %d fetches at once, want at most %d (connections reused)", par, got, rounds, par, most)
	}
}
