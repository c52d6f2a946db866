package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"drover/store/redis/redistest"
)

// requeueSite serves 60 pages as newSite does, but /p/1 to /p/5 answer
// 429 (Retry-After: 1) to their first request, and the first request for
// /p/7 is held until the test lets it go, telling the test it came.
type requeueSite struct {
	mu     sync.Mutex
	status map[string][]int // per path, the statuses served
	held   chan struct{}    // closed when /p/7 is first asked for
	gate   chan struct{}    // closed by the test: the held request ends
	srv    *httptest.Server
}

func newRequeueSite(t *testing.T) *requeueSite {
	s := &requeueSite{status: map[string][]int{}, held: make(chan struct{}), gate: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if !strings.HasPrefix(p, "/p/") {
			http.NotFound(w, r)
			return
		}
		s.mu.Lock()
		first := len(s.status[p]) == 0
		code := http.StatusOK
		if first && (p == "/p/1" || p == "/p/2" || p == "/p/3" || p == "/p/4" || p == "/p/5") {
			code = http.StatusTooManyRequests
		}
		s.status[p] = append(s.status[p], code)
		s.mu.Unlock()
		if first && p == "/p/7" {
			close(s.held)
			<-s.gate
		}
		if code != http.StatusOK {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(code)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		var b strings.Builder
		b.WriteString("<html><body>")
		if p == "/p/0" {
			for i := 1; i < 60; i++ {
				fmt.Fprintf(&b, `<a href="/p/%d">%d</a>`, i, i)
			}
		}
		b.WriteString("</body></html>")
		w.Write([]byte(b.String()))
	}))
	t.Cleanup(func() {
		select {
		case <-s.gate:
		default:
			close(s.gate)
		}
		s.srv.Close()
	})
	return s
}

// pages are the paths served at least once and those served with a 200.
func (s *requeueSite) pages() (asked, ok int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, codes := range s.status {
		asked++
		for _, c := range codes {
			if c == http.StatusOK {
				ok++
				break
			}
		}
	}
	return asked, ok
}

// TestCrawlBudgetRequeuedOnRedis: a crawl with --max-pages 20 over two
// coordinators on a Redis Cluster fetches exactly 20 pages though its
// jobs are requeued: five pages answer 429 first (backed off, fetched
// again), and every crawl worker is SIGKILLed while one holds a page
// (its jobs run again on new workers). The 40 jobs the budget failed,
// requeued with drover requeue --failed, are charged first and refused
// (they ran uncharged: 40 more pages were fetched), and no page more is
// asked for.
func TestCrawlBudgetRequeuedOnRedis(t *testing.T) {
	drover(t)
	cl := redistest.Start(t)
	st := newRequeueSite(t)
	a, b := startRedisServe(t, cl.URL()), startRedisServe(t, cl.URL())
	var workers []*exec.Cmd
	for i, rc := range []*redisCoordinator{a, b} {
		cmd, _ := start(t, "worker", "--connect", rc.peers, "--slots", "4", "--id", fmt.Sprintf("crawler-%d", i), "--heartbeat-interval", "1s")
		workers = append(workers, cmd)
	}
	if out, code := run(t, "", "submit", "--connect", a.peers, "--admin", a.adm, "--crawler", "site", "--max-pages", "20", st.srv.URL+"/p/0"); code != 0 {
		t.Fatalf("submit: exit %d, %s", code, out)
	}
	select {
	case <-st.held:
	case <-time.After(90 * time.Second):
		t.Fatal("/p/7 was not asked for within 90s")
	}
	for _, w := range workers {
		w.Process.Signal(syscall.SIGKILL)
	}
	close(st.gate)
	for i, rc := range []*redisCoordinator{a, b} {
		start(t, "worker", "--connect", rc.peers, "--slots", "4", "--id", fmt.Sprintf("crawler-again-%d", i), "--heartbeat-interval", "1s")
	}
	eventually(t, "the cluster settles", 120*time.Second, func() bool {
		tot, _, ok := statusJSON(t, a.adm)
		c := tot.Cluster
		return ok && c != nil && c.Queued == 0 && c.Claimed == 0 && c.Done+c.Failed >= 60
	})
	if asked, ok := st.pages(); asked != 20 || ok != 20 {
		t.Fatalf("%d pages asked for, %d served; want exactly 20 of each (--max-pages 20)", asked, ok)
	}
	for _, rc := range []*redisCoordinator{a, b} {
		o, out, _ := outcome(t, "requeue", "--failed", "--crawler", "site", "--yes", "--connect", rc.adm)
		if o.Affected != 0 {
			t.Fatalf("requeue --failed on %s: %d requeued; want none (the budget is spent)\n%s", rc.adm, o.Affected, out)
		}
	}
	// What a requeue started would be asked for now; the crawls' figures
	// are read back once a second.
	eventually(t, "both coordinators show 20 of 20 pages", 30*time.Second, func() bool {
		ca, cb := crawlsOf(t, a.adm)["site"], crawlsOf(t, b.adm)["site"]
		return ca.Pages == 20 && cb.Pages == 20 && ca.Queued+ca.Running == 0
	})
	if asked, ok := st.pages(); asked != 20 || ok != 20 {
		t.Fatalf("after the requeue: %d pages asked for, %d served; want still 20", asked, ok)
	}
}
