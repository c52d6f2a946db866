package cli

import (
	"context"
	"fmt"
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
	"drover/crawl/demosite"
	"drover/crawl/job"
)

const (
	benchPages   = 10000
	benchWorkers = 8
)

// crawlSettings are what both sides of BenchmarkCrawlLocal run with.
type crawlSettings struct {
	name string
	// workers × slots: drover's local workers and slots each; the plain
	// loop runs as many goroutines.
	workers, slots int
	// perHost is crawl.per_host, fetches at once per host, on both sides.
	perHost int
}

// crawlLocalCases: drover crawl's defaults, and the settings tuned for one
// local host. On both, crawl.min_delay keeps its default of 1 s, which
// (crawl.Config.LocalNoDelay, as drover crawl sets it) is not applied to a
// loopback host like the benchmark's; robots.txt is asked for and honoured
// on both sides.
var crawlLocalCases = []crawlSettings{
	{name: "default", workers: 4, slots: 2, perHost: 2}, // --workers 4 --slots 2, crawl.per_host 2
	{name: "tuned", workers: benchWorkers, slots: 2, perHost: benchWorkers},
}

// BenchmarkCrawlLocal compares, on the same local site of 10k small pages
// and on equal terms (the settings of crawlLocalCases on both sides, both
// cold: each iteration starts a new Fetcher, as each drover crawl does):
//   - loop: the ceiling, workers × slots goroutines fetching the known list
//     of URLs with one crawl.Fetcher, no coordination at all;
//   - drover: `drover crawl` in-process, discovering the pages through the
//     coordinator (dedup, dispatch, results with links, JSONL sink) over
//     the inproc transport; it also reads the origin's sitemaps (two
//     fetches more).
//
// The two alternate within each iteration, so a shared machine's load
// weighs on both alike; it reports each one's pages/s and drover/loop.
func BenchmarkCrawlLocal(b *testing.B) {
	hs := httptest.NewServer(demosite.Tree(benchPages))
	defer hs.Close()
	urls := make([]string, benchPages)
	for i := range urls {
		urls[i] = fmt.Sprintf("%s/p/%d", hs.URL, i)
	}
	for _, cs := range crawlLocalCases {
		b.Run(cs.name, func(b *testing.B) {
			crawlEnv(b)
			var loop, drover time.Duration
			for range b.N {
				start := time.Now()
				fetchAll(b, cs, urls)
				loop += time.Since(start)
				start = time.Now()
				droverCrawl(b, hs.URL, cs)
				drover += time.Since(start)
			}
			rate := func(d time.Duration) float64 { return float64(benchPages*b.N) / d.Seconds() }
			b.ReportMetric(rate(loop), "loop-pages/s")
			b.ReportMetric(rate(drover), "drover-pages/s")
			b.ReportMetric(rate(drover)/rate(loop), "drover/loop")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// fetchAll fetches urls with a new Fetcher of cs's settings from
// cs.workers × cs.slots goroutines.
func fetchAll(b *testing.B, cs crawlSettings, urls []string) {
	cfg := crawl.DefaultConfig("bench")
	cfg.PerHost, cfg.LocalNoDelay, cfg.MaxDepth = cs.perHost, true, 0
	f, err := crawl.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range cs.workers * cs.slots {
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

// crawlEnv points drover crawl at OS-chosen loopback ports and no config
// file, with no metrics.
func crawlEnv(b *testing.B) {
	b.Setenv("DROVER_CONFIG", "")
	b.Setenv("DROVER_PEERS_LISTEN", "tcp://127.0.0.1:*")
	b.Setenv("DROVER_ADMIN_LISTEN", "tcp://127.0.0.1:*")
	b.Setenv("DROVER_EVENTS_LISTEN", "tcp://127.0.0.1:*")
	b.Setenv("DROVER_METRICS_LISTEN", "")
}

// droverCrawl runs one drover crawl of the tree site at base with cs's
// settings, in-process, and checks that it fetched every page.
func droverCrawl(b *testing.B, base string, cs crawlSettings) {
	var out, errb strings.Builder
	code := Main([]string{"crawl", base + "/p/0", "--no-tui", "--workers", strconv.Itoa(cs.workers), "--slots", strconv.Itoa(cs.slots),
		"--per-host", strconv.Itoa(cs.perHost), "--max-depth", "0"}, strings.NewReader(""), &out, &errb)
	if code != 0 || !strings.Contains(out.String(), fmt.Sprintf("%d pages fetched", benchPages)) {
		b.Fatalf("crawl exit %d:\n%s\n%s", code, out.String(), errb.String())
	}
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
	crawlEnv(b)
	b.Setenv("DROVER_CRAWL_MIN_DELAY", "0s")
	tuned := crawlLocalCases[1]
	start, cpu := time.Now(), cpuTime(b)
	for range b.N {
		droverCrawl(b, base, tuned)
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
