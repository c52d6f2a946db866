package demosite

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// get asks the site for target directly (no network) and returns the
// recorded answer.
func get(s *Site, host, target string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "http://"+host+target, nil)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

func TestSiteAnswers(t *testing.T) {
	s := New(Options{})
	tests := []struct {
		target   string
		status   int
		ctype    string
		contains string
	}{
		{"/robots.txt", 200, "text/plain", "Disallow: /private/"},
		{"/", 200, "text/html", "<title>drover demo site</title>"},
		{"/docs/ch-3/page-7.html", 200, "text/html", "Docs · Chapter 3 · Page 7"},
		{"/blog/ch-1/page-1.html", 200, "text/html", `<base href="/blog/">`},
		{"/status/missing.html", 404, "text/html", "Not found"},
		{"/no/such/page", 404, "text/html", "Not found"},
		{"/docs/ch-99/", 404, "text/html", ""},
		{"/status/broken.html", 500, "text/plain", "always broken"},
		{"/status/data.txt", 200, "text/plain", `<a href="/status/hidden.html">`},
		{"/files/report.pdf?download=1", 200, "application/pdf", "%PDF"},
		{"/calendar/2026/11", 200, "text/html", `href="12"`},
		{"/calendar/2027/1", 200, "text/html", `href="../2026/12"`},
		{"/calendar/2026/13", 404, "", ""},
		{"/calendar/2026/011", 404, "", ""},
		{"/calendar/0/5", 404, "", ""},
		{"/calendar/9999/12", 200, "text/html", "Calendar 9999-12"},
		{"/private/open.html", 200, "text/html", "Open despite"},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			w := get(s, "demo.test", tt.target)
			if w.Code != tt.status {
				t.Errorf("status %d, want %d", w.Code, tt.status)
			}
			if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, tt.ctype) {
				t.Errorf("Content-Type %q, want %q", ct, tt.ctype)
			}
			if !strings.Contains(w.Body.String(), tt.contains) {
				t.Errorf("body lacks %q:\n%s", tt.contains, w.Body)
			}
		})
	}
	if w := get(s, "demo.test", "/calendar/9999/12"); strings.Contains(w.Body.String(), "10000") {
		t.Error("the calendar runs past year 9999")
	}
}

func TestSiteThrottlesThenServes(t *testing.T) {
	s := New(Options{ThrottleFirst: 3, RetryAfter: 1500 * time.Millisecond, FlapFailures: 2})
	for i, want := range []int{429, 429, 429, 200, 200} {
		w := get(s, "demo.test", "/status/busy.html")
		if w.Code != want {
			t.Fatalf("request %d: %d, want %d", i+1, w.Code, want)
		}
		if ra := w.Header().Get("Retry-After"); (want == 429) != (ra == "2") {
			t.Errorf("request %d: Retry-After %q (1.5s rounds up to 2)", i+1, ra)
		}
	}
	for i, want := range []int{503, 503, 503, 200} {
		if w := get(s, "demo.test", "/status/unavailable.html"); w.Code != want {
			t.Fatalf("unavailable request %d: %d, want %d", i+1, w.Code, want)
		}
	}
	for i, want := range []int{500, 500, 200, 200} {
		if w := get(s, "demo.test", "/status/flaky.html"); w.Code != want {
			t.Fatalf("flaky request %d: %d, want %d", i+1, w.Code, want)
		}
	}
	for range 5 {
		if w := get(s, "demo.test", "/status/broken.html"); w.Code != 500 {
			t.Fatalf("broken answered %d", w.Code)
		}
	}
	if n := s.Requests("/status/busy.html"); n != 5 {
		t.Errorf("Requests = %d, want 5", n)
	}
	hits := s.Hits()
	if len(hits) != 5+4+4+5 || hits[0].Target != "/status/busy.html" || hits[0].Status != 429 || hits[3].Status != 200 {
		t.Errorf("Hits = %+v", hits)
	}
}

func TestSiteRedirects(t *testing.T) {
	s := New(Options{})
	tests := []struct {
		host, target, location string
		status                 int
	}{
		{"demo.test", "/old-docs", "/docs/", 301},
		{"demo.test", "/moved", "HTTP://DEMO.TEST/landing.html", 302},
		{"127.0.0.1:8080", "/moved", "HTTP://127.0.0.1:8080/landing.html", 302},
	}
	for _, tt := range tests {
		w := get(s, tt.host, tt.target)
		if w.Code != tt.status || w.Header().Get("Location") != tt.location {
			t.Errorf("%s%s: %d %q, want %d %q", tt.host, tt.target, w.Code, w.Header().Get("Location"), tt.status, tt.location)
		}
	}
}

func TestSiteSpellingsFollowOrigin(t *testing.T) {
	s := New(Options{})
	home := get(s, "demo.test", "/").Body.String()
	for _, want := range []string{`href="HTTP://DEMO.TEST/"`, `href="http://demo.test:80/private/open.html"`, `href="/shop/./zz/../"`, `href="/#part-2"`} {
		if !strings.Contains(home, want) {
			t.Errorf("home on the default port lacks %s", want)
		}
	}
	withPort := get(s, "127.0.0.1:8080", "/").Body.String()
	if !strings.Contains(withPort, `href="http://127.0.0.1:8080/private/open.html"`) || strings.Contains(withPort, ":80/") {
		t.Errorf("home on port 8080 must spell the port as served:\n%s", withPort)
	}
	if a, b := get(New(Options{}), "demo.test", "/docs/ch-2/").Body.String(), get(s, "demo.test", "/docs/ch-2/").Body.String(); a != b {
		t.Error("two sites render one page differently")
	}
}

func TestSiteSlowPageHonoursContext(t *testing.T) {
	s := New(Options{SlowDelay: time.Hour})
	srv := httptest.NewServer(s)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/status/slow.html", nil)
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("an hour-slow page answered within 100ms")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v", err)
	}
	// The handler returns when the client leaves, rather than in an hour:
	// srv.Close (deferred) waits for it.
}

func TestSiteSlowPageAnswers(t *testing.T) {
	s := New(Options{SlowDelay: 20 * time.Millisecond})
	srv := httptest.NewServer(s)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/status/slow.html")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "slow-child.html") {
		t.Errorf("slow page: %d %s", resp.StatusCode, body)
	}
}

func TestSiteRefusesOtherMethods(t *testing.T) {
	s := New(Options{})
	r := httptest.NewRequest(http.MethodPost, "http://demo.test/", strings.NewReader("x"))
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST answered %d", w.Code)
	}
}
