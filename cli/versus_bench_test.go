package cli

import (
	"drover/crawl/demosite"
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
// pages, see treeSite) from /p/0 in one run with three crawlers, on equal
// terms: each run starts cold (a new drover crawl, a new colly collector,
// a new wget), robots.txt is asked for and honoured by all three, no
// politeness delay is applied (drover's default crawl.min_delay of 1 s is
// not applied to a loopback host; colly and wget have none by default),
// and the parallelism per host is the same for drover and colly:
//   - default: drover crawl's defaults (--workers 4 --slots 2,
//     crawl.per_host 2) against colly at LimitRule{Parallelism: 2} (colly's
//     own default, unlimited, is no polite crawler's);
//   - tuned: 8 fetches at once per host on both (drover --workers 8
//     --slots 1 --per-host 8), and wget `-r -l inf -np --spider` (one fetch
//     at a time: wget has no parallel mode), when wget is installed.
//
// drover reads no sitemaps here (--sitemaps=false), as the others do not.
// It reports each one's pages/s and drover's ratio to the others
// (drover/colly, drover/wget): the ratios, measured side by side on the
// same machine in the same run, are what docs/BENCHMARKS.md quotes.
func BenchmarkCrawlVersus(b *testing.B) {
	hs := httptest.NewServer(demosite.Tree(versusPages))
	defer hs.Close()
	crawlEnv(b)
	wget, _ := exec.LookPath("wget")
	for _, cs := range []struct {
		name           string
		workers, slots int
		perHost        int
		wget           bool
	}{
		{name: "default", workers: 4, slots: 2, perHost: 2},
		{name: "tuned", workers: benchWorkers, slots: 1, perHost: benchWorkers, wget: wget != ""},
	} {
		b.Run(cs.name, func(b *testing.B) {
			var took [3]time.Duration // drover, colly, wget
			for range b.N {
				start := time.Now()
				var out, errb strings.Builder
				code := Main([]string{"crawl", hs.URL + "/p/0", "--no-tui", "--workers", strconv.Itoa(cs.workers), "--slots", strconv.Itoa(cs.slots),
					"--per-host", strconv.Itoa(cs.perHost), "--max-depth", "0", "--sitemaps=false"}, strings.NewReader(""), &out, &errb)
				if code != 0 || !strings.Contains(out.String(), fmt.Sprintf("%d pages fetched", versusPages)) {
					b.Fatalf("crawl exit %d:\n%s\n%s", code, out.String(), errb.String())
				}
				took[0] += time.Since(start)

				start = time.Now()
				if n := collyCrawl(b, hs.URL+"/p/0", cs.perHost); n != versusPages {
					b.Fatalf("colly fetched %d pages, want %d", n, versusPages)
				}
				took[1] += time.Since(start)

				if cs.wget {
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
			if cs.wget {
				b.ReportMetric(rate(took[2]), "wget-pages/s")
				b.ReportMetric(rate(took[0])/rate(took[2]), "drover/wget")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

// collyCrawl crawls from seed with a new colly collector, parallelism par
// on the host, robots.txt honoured and no delay, and returns how many
// pages it fetched.
func collyCrawl(b *testing.B, seed string, par int) int {
	c := colly.NewCollector(colly.Async(true), colly.MaxDepth(0))
	c.IgnoreRobotsTxt = false // as drover: ask for robots.txt and honour it
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
