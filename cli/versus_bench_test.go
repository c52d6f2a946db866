package cli

import (
	"fmt"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocolly/colly/v2"
)

// versusPages is the size of the tree site BenchmarkCrawlVersus crawls.
const versusPages = 3000

// BenchmarkCrawlVersus crawls the same local tree site (versusPages small
// pages, see treeSite) from /p/0 in one run with three crawlers, with no
// politeness delay:
//   - drover: `drover crawl` in-process, 8 local workers (--per-host 8);
//   - colly: a github.com/gocolly/colly/v2 collector, async, parallelism 8
//     on the host, following every a[href];
//   - wget: `wget -r -l inf -np --spider` (one fetch at a time: wget has no
//     parallel mode), when wget is installed.
//
// It reports each one's pages/s and drover's ratio to the others
// (drover/colly, drover/wget): the ratios, measured side by side on the
// same machine in the same run, are what docs/BENCHMARKS.md quotes.
func BenchmarkCrawlVersus(b *testing.B) {
	hs := httptest.NewServer(treeSite(versusPages))
	defer hs.Close()
	b.Setenv("DROVER_CONFIG", "")
	b.Setenv("DROVER_PEERS_LISTEN", "tcp://127.0.0.1:*")
	b.Setenv("DROVER_ADMIN_LISTEN", "tcp://127.0.0.1:*")
	b.Setenv("DROVER_EVENTS_LISTEN", "tcp://127.0.0.1:*")
	b.Setenv("DROVER_METRICS_LISTEN", "")
	b.Setenv("DROVER_CRAWL_MIN_DELAY", "0s")
	wget, _ := exec.LookPath("wget")
	var took [3]time.Duration // drover, colly, wget
	for range b.N {
		start := time.Now()
		var out, errb strings.Builder
		code := Main([]string{"crawl", hs.URL + "/p/0", "--no-tui", "--workers", strconv.Itoa(benchWorkers), "--slots", "1",
			"--per-host", strconv.Itoa(benchWorkers), "--max-depth", "0", "--sitemaps=false"}, strings.NewReader(""), &out, &errb)
		if code != 0 || !strings.Contains(out.String(), fmt.Sprintf("%d pages fetched", versusPages)) {
			b.Fatalf("crawl exit %d:\n%s\n%s", code, out.String(), errb.String())
		}
		took[0] += time.Since(start)

		start = time.Now()
		if n := collyCrawl(b, hs.URL+"/p/0", benchWorkers); n != versusPages {
			b.Fatalf("colly fetched %d pages, want %d", n, versusPages)
		}
		took[1] += time.Since(start)

		if wget != "" {
			start = time.Now()
			cmd := exec.Command(wget, "-r", "-l", "inf", "-np", "--spider", "-q", "-P", b.TempDir(), hs.URL+"/p/0")
			if err := cmd.Run(); err != nil {
				b.Fatalf("wget: %v", err)
			}
			took[2] += time.Since(start)
		}
	}
	rate := func(d time.Duration) float64 { return float64(versusPages*b.N) / d.Seconds() }
	b.ReportMetric(rate(took[0]), "drover-pages/s")
	b.ReportMetric(rate(took[1]), "colly-pages/s")
	b.ReportMetric(rate(took[0])/rate(took[1]), "drover/colly")
	if wget != "" {
		b.ReportMetric(rate(took[2]), "wget-pages/s")
		b.ReportMetric(rate(took[0])/rate(took[2]), "drover/wget")
	}
}

// collyCrawl crawls from seed with a colly collector, parallelism par on
// the host and no delay, and returns how many pages it fetched.
func collyCrawl(b *testing.B, seed string, par int) int {
	c := colly.NewCollector(colly.Async(true), colly.MaxDepth(0))
	if err := c.Limit(&colly.LimitRule{DomainGlob: "*", Parallelism: par}); err != nil {
		b.Fatal(err)
	}
	var pages atomic.Int64 // async: callbacks run on the collector's goroutines
	c.OnResponse(func(*colly.Response) { pages.Add(1) })
	c.OnHTML("a[href]", func(e *colly.HTMLElement) { _ = e.Request.Visit(e.Attr("href")) })
	if err := c.Visit(seed); err != nil {
		b.Fatal(err)
	}
	c.Wait()
	return int(pages.Load())
}
