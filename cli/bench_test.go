package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"drover/crawl"
	"drover/crawl/job"
)

// treeSite serves n small HTML pages /p/0 .. /p/(n-1); page i links to
// pages 10i+1 .. 10i+10, so a crawl from /p/0 reaches all n, each found
// once and linked from nowhere else. robots.txt is absent (404: allow all).
func treeSite(n int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/p/"))
		if err != nil || i < 0 || i >= n || !strings.HasPrefix(r.URL.Path, "/p/") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		var b strings.Builder
		fmt.Fprintf(&b, "<html><head><title>page %d</title></head><body><h1>page %d</h1>", i, i)
		for c := 10*i + 1; c <= 10*i+10 && c < n; c++ {
			fmt.Fprintf(&b, `<a href="/p/%d">page %d</a> `, c, c)
		}
		b.WriteString("</body></html>")
		io.WriteString(w, b.String())
	})
}

const (
	benchPages   = 10000
	benchWorkers = 8
	benchSlots   = "2"
)

// BenchmarkCrawlLocal compares, on the same local site of 10k small pages:
//   - plain-loop: the ceiling, 8 goroutines fetching the known list of URLs
//     with one shared crawl.Fetcher (same politeness settings), no
//     coordination at all;
//   - drover: `drover crawl` in-process with 8 local workers (2 slots each,
//     the default: the next job waits while a page is fetched),
//     discovering the pages through the coordinator (dedup, dispatch,
//     results with links, JSONL sink) over the inproc transport.
//
// Both report pages/s; docs/BENCHMARKS.md gives the ratio.
func BenchmarkCrawlLocal(b *testing.B) {
	hs := httptest.NewServer(treeSite(benchPages))
	defer hs.Close()
	cfg := crawl.DefaultConfig("bench")
	cfg.PerHost, cfg.MinDelay, cfg.MaxDepth = benchWorkers, 0, 0

	b.Run("plain-loop", func(b *testing.B) {
		f, err := crawl.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		urls := make([]string, benchPages)
		for i := range urls {
			urls[i] = fmt.Sprintf("%s/p/%d", hs.URL, i)
		}
		b.ResetTimer()
		start, cpu := time.Now(), cpuTime(b)
		for range b.N {
			var next atomic.Int64
			var wg sync.WaitGroup
			for range benchWorkers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1) - 1
						if i >= int64(len(urls)) {
							return
						}
						if p := f.Fetch(context.Background(), urls[i]); p.Outcome != crawl.OK {
							b.Errorf("%s: %s %s", urls[i], p.Outcome, p.Err)
							return
						}
					}
				}()
			}
			wg.Wait()
		}
		b.ReportMetric(float64(benchPages*b.N)/time.Since(start).Seconds(), "pages/s")
		b.ReportMetric(float64((cpuTime(b)-cpu).Microseconds())/float64(benchPages*b.N), "cpu-µs/page")
	})

	b.Run("drover", func(b *testing.B) { benchCrawl(b, hs.URL) })
}

// BenchmarkCrawlCoordination is BenchmarkCrawlLocal's drover run with the
// fetch taken out: each page is made up in memory (the tree site's title
// and links, no HTTP), so what it measures is everything drover adds to a
// fetch: dispatch, the worker library, results with their links, the
// ledger's dedup and the sink. Its cpu-µs/page is steadier than the crawl
// benchmark's on a shared machine, for comparing changes to that part.
//
// With fetch=0 results arrive in bursts and every step of the reactor and
// the workers' loops handles many; with fetch=400µs (the page "fetched"
// after a 400 µs wait, no CPU) they arrive one at a time, as in a real
// crawl, and each pays the hand-overs between goroutines alone.
func BenchmarkCrawlCoordination(b *testing.B) {
	for _, wait := range []time.Duration{0, 400 * time.Microsecond} {
		b.Run("fetch="+wait.String(), func(b *testing.B) {
			old := fetcherFor
			fetcherFor = func(*crawl.Fetcher) job.Fetcher { return treePages{wait: wait} }
			b.Cleanup(func() { fetcherFor = old })
			benchCrawl(b, "http://tree.test")
		})
	}
}

// benchCrawl runs b.N crawls of the tree site at base with drover crawl,
// in-process, reporting pages/s and CPU per page.
func benchCrawl(b *testing.B, base string) {
	b.Setenv("DROVER_CONFIG", "")
	b.Setenv("DROVER_PEERS_LISTEN", "tcp://127.0.0.1:*")
	b.Setenv("DROVER_ADMIN_LISTEN", "tcp://127.0.0.1:*")
	b.Setenv("DROVER_EVENTS_LISTEN", "tcp://127.0.0.1:*")
	b.Setenv("DROVER_METRICS_LISTEN", "")
	b.Setenv("DROVER_CRAWL_MIN_DELAY", "0s")
	start, cpu := time.Now(), cpuTime(b)
	for range b.N {
		var out, errb strings.Builder
		code := Main([]string{"crawl", base + "/p/0", "--no-tui", "--workers", strconv.Itoa(benchWorkers), "--slots", benchSlots,
			"--per-host", strconv.Itoa(benchWorkers), "--max-depth", "0"}, strings.NewReader(""), &out, &errb)
		if code != 0 || !strings.Contains(out.String(), fmt.Sprintf("%d pages fetched", benchPages)) {
			b.Fatalf("crawl exit %d:\n%s\n%s", code, out.String(), errb.String())
		}
	}
	b.ReportMetric(float64(benchPages*b.N)/time.Since(start).Seconds(), "pages/s")
	b.ReportMetric(float64((cpuTime(b)-cpu).Microseconds())/float64(benchPages*b.N), "cpu-µs/page")
}

// treePages makes up the tree site's pages (see treeSite) without
// fetching them: the same titles, links and sizes, after wait.
type treePages struct{ wait time.Duration }

func (t treePages) Fetch(_ context.Context, rawURL string) crawl.Page {
	if t.wait > 0 {
		time.Sleep(t.wait) // stands for the network: no CPU, a delay
	}
	p := crawl.Page{URL: rawURL, FinalURL: rawURL, FetchedAt: time.Now(), Status: http.StatusNotFound, Outcome: crawl.OK}
	cut := strings.LastIndex(rawURL, "/p/")
	i, err := strconv.Atoi(rawURL[cut+3:])
	if cut < 0 || err != nil || i < 0 || i >= benchPages {
		return p
	}
	p.Status, p.ContentType, p.Title = http.StatusOK, "text/html; charset=utf-8", "page "+strconv.Itoa(i)
	p.Bytes = 70
	for c := 10*i + 1; c <= 10*i+10 && c < benchPages; c++ {
		p.Links = append(p.Links, rawURL[:cut+3]+strconv.Itoa(c))
		p.Bytes += 30
	}
	return p
}

// cpuTime is the CPU time (user and system) the process has used so far:
// per page, it says what each side costs whatever else the machine runs.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
