package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"drover/admin"
	"drover/crawl"
)

// site is a local web site that counts the fetches of each path.
type site struct {
	mu      sync.Mutex
	fetches map[string]int
	srv     *httptest.Server
}

// newSite serves 60 pages: /p/0 links to /p/1 ... /p/59; /c/ starts a chain
// /c/ -> /c/1 -> /c/2 with a link out of the /c/ prefix to /d/x.
func newSite(t *testing.T) *site {
	s := &site{fetches: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" || strings.HasPrefix(r.URL.Path, "/sitemap") { // not pages
			http.NotFound(w, r)
			return
		}
		s.mu.Lock()
		s.fetches[r.URL.Path]++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		var b strings.Builder
		b.WriteString("<html><body>")
		switch p := r.URL.Path; {
		case p == "/p/0":
			for i := 1; i < 60; i++ {
				fmt.Fprintf(&b, `<a href="/p/%d">%d</a>`, i, i)
			}
		case p == "/c/":
			b.WriteString(`<a href="/c/1">1</a><a href="/d/x">out</a>`)
		case p == "/c/1":
			b.WriteString(`<a href="/c/2">2</a>`)
		}
		b.WriteString("</body></html>")
		w.Write([]byte(b.String()))
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *site) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]int, len(s.fetches))
	for k, v := range s.fetches {
		m[k] = v
	}
	return m
}

// fetchedOnce fails t unless the site served exactly want pages, each
// once (why says where want comes from).
func (s *site) fetchedOnce(t *testing.T, want int, why string) {
	t.Helper()
	fetched := 0
	for path, n := range s.counts() {
		if n != 1 || !strings.HasPrefix(path, "/p/") {
			t.Errorf("%s fetched %d times, want once", path, n)
		}
		fetched += n
	}
	if fetched != want {
		t.Fatalf("%d pages fetched, want exactly %d (%s)", fetched, want, why)
	}
}

// TestFleetCrawlBudget: three crawl worker processes without crawl flags
// take part in crawls defined by submit. A crawl of a 60-page site with
// --max-pages 20 fetches exactly 20 pages, drover results --crawler prints
// their 20 page records (and the rest as budget), the count survives a kill
// -9 of serve; --scope prefix and --max-depth 1 hold on the workers.
func TestFleetCrawlBudget(t *testing.T) {
	st := newSite(t)
	dir := t.TempDir()
	serveArgs := []string{"serve", "--store", dir, "--metrics", "", "--heartbeat-interval", "1s"}
	srv, srvOut := start(t, append(serveArgs, anyPorts...)...)
	peers, adminEP, events := serving(t, srvOut)
	serveArgs = append(serveArgs, onPorts(peers, adminEP, events)...) // a restart keeps the ports
	for i := range 3 {
		start(t, "worker", "--connect", peers, "--slots", "4", "--id", fmt.Sprintf("crawler-%d", i), "--heartbeat-interval", "1s")
	}
	settled := func(n int) func() bool {
		return func() bool {
			tot, _, ok := statusJSON(t, adminEP)
			return ok && tot.Queued+tot.Dispatched+tot.Backoff == 0 && tot.Done+tot.Failed >= n
		}
	}
	if out, code := run(t, "", "submit", "--connect", peers, "--admin", adminEP, "--crawler", "site", "--max-pages", "20", st.srv.URL+"/p/0"); code != 0 {
		t.Fatalf("submit: exit %d, %s", code, out)
	}
	eventually(t, "the budgeted crawl settles", 90*time.Second, settled(60))
	st.fetchedOnce(t, 20, "--max-pages 20")
	out, code := run(t, "", "results", "--connect", adminEP, "--crawler", "site")
	if code != 0 {
		t.Fatalf("results: exit %d, %s", code, out)
	}
	pages, budget := 0, 0
	for _, r := range resultLines(t, out) {
		switch r.Outcome {
		case "ok":
			var rec crawl.Record
			if err := json.Unmarshal([]byte(r.Output), &rec); err != nil || rec.URL != r.URL || rec.Status != 200 {
				t.Fatalf("result %+v: want a page record of %s with status 200 (%v)", r, r.URL, err)
			}
			if st.counts()[strings.TrimPrefix(r.URL, st.srv.URL)] != 1 {
				t.Fatalf("page record of %s, which the site did not serve", r.URL)
			}
			pages++
		case "budget":
			budget++
		default:
			t.Fatalf("result %+v: want ok or budget", r)
		}
	}
	if pages != 20 || budget != 40 {
		t.Fatalf("results: %d page records and %d budget skips, want 20 and 40", pages, budget)
	}
	out, _ = run(t, "", "status", "--connect", adminEP)
	if !strings.Contains(out, "site") || !strings.Contains(out, "0 of 20") {
		t.Fatalf("status:\n%s\nwant crawl site with 0 of 20 pages left", out)
	}

	// The count survives kill -9: a new seed of the crawl is not fetched.
	srv.Process.Kill()
	srv.Wait()
	_, out2 := start(t, serveArgs...)
	eventually(t, "restarted serve listening", 10*time.Second, func() bool { return strings.Contains(out2.String(), "drover serving") })
	if out, code := run(t, "", "submit", "--connect", peers, "--crawler", "site", st.srv.URL+"/extra"); code != 0 {
		t.Fatalf("submit after restart: exit %d, %s", code, out)
	}
	eventually(t, "the extra seed settles", 60*time.Second, settled(61))
	if n := st.counts()["/extra"]; n != 0 {
		t.Fatalf("/extra fetched %d times after the budget was spent, want 0", n)
	}

	// Scope prefix and depth 1, which the workers do not have (host, 10).
	if out, code := run(t, "", "submit", "--connect", peers, "--admin", adminEP, "--crawler", "chain", "--scope", "prefix", "--max-depth", "1", st.srv.URL+"/c/"); code != 0 {
		t.Fatalf("submit chain: exit %d, %s", code, out)
	}
	eventually(t, "the chain crawl settles", 60*time.Second, settled(63))
	c := st.counts()
	if c["/c/"] != 1 || c["/c/1"] != 1 || c["/c/2"] != 0 || c["/d/x"] != 0 {
		t.Fatalf("chain fetches %v: want /c/ and /c/1 once, /c/2 (depth 2) and /d/x (out of the prefix) never", c)
	}
	var crawls []admin.Crawl
	out, _ = run(t, "", "status", "--json", "--connect", adminEP)
	var stj struct {
		Crawls []admin.Crawl `json:"crawls"`
	}
	if err := json.Unmarshal([]byte(out), &stj); err != nil {
		t.Fatal(err)
	}
	crawls = stj.Crawls
	if len(crawls) != 2 || crawls[0].Name != "chain" || crawls[0].Scope != "prefix" || crawls[0].MaxDepth != 1 || crawls[1].Pages != 20 {
		t.Fatalf("status crawls %+v: want chain (prefix, depth 1) and site (20 pages)", crawls)
	}
}
