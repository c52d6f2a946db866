package crawl

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// benchPages is the size of the local benchmark site.
const benchPages = 10000

// benchSite serves benchPages small HTML pages at /p/N, each with a title
// and 10 links to other pages, and a robots.txt allowing everything.
func benchSite(b *testing.B) (*httptest.Server, []string) {
	b.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
			return
		}
		n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/p/"))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		var sb strings.Builder
		fmt.Fprintf(&sb, "<!doctype html><html><head><title>Page %d</title></head><body><ul>", n)
		for i := 1; i <= 10; i++ {
			fmt.Fprintf(&sb, `<li><a href="/p/%d">page %d</a></li>`, (n*7+i*131)%benchPages, i)
		}
		sb.WriteString("</ul></body></html>")
		io.WriteString(w, sb.String())
	}))
	b.Cleanup(srv.Close)
	urls := make([]string, benchPages)
	for i := range urls {
		urls[i] = fmt.Sprintf("%s/p/%d", srv.URL, i)
	}
	return srv, urls
}

// fetchLoop runs fetch over urls (cycling) b.N times from 8 goroutines
// and reports pages/s.
func fetchLoop(b *testing.B, urls []string, fetch func(string) error) {
	const workers = 8
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	b.ResetTimer()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				if err := fetch(urls[i%int64(len(urls))]); err != nil {
					firstErr.CompareAndSwap(nil, err)
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if err := firstErr.Load(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
}

// BenchmarkFetchLocal fetches small pages from a local httptest site with 8
// goroutines sharing one Fetcher (robots.txt, per-host slots, link
// extraction), without any coordination: the "plain loop" ceiling the
// end-to-end crawl benchmark compares against.
func BenchmarkFetchLocal(b *testing.B) {
	_, urls := benchSite(b)
	cfg := DefaultConfig("bench")
	cfg.MinDelay = 0
	cfg.PerHost = 8
	f, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	fetchLoop(b, urls, func(u string) error {
		p := f.Fetch(ctx, u)
		if p.Outcome != OK || p.Status != 200 || len(p.Links) != 10 {
			return fmt.Errorf("fetch %s: %v (%d links)", u, p, len(p.Links))
		}
		return nil
	})
}

// BenchmarkFetchLocalNetHTTP is the same loop with a bare net/http client
// that reads and discards the body: what the Fetcher's politeness, robots
// and parsing cost on top of HTTP.
func BenchmarkFetchLocalNetHTTP(b *testing.B) {
	_, urls := benchSite(b)
	tr := &http.Transport{MaxIdleConnsPerHost: 8}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	fetchLoop(b, urls, func(u string) error {
		resp, err := c.Get(u)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	})
}

// BenchmarkExtractLinks parses a 20 KB page with 200 links.
func BenchmarkExtractLinks(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("<!doctype html><html><head><title>Bench page</title></head><body>")
	for i := range 200 {
		fmt.Fprintf(&sb, `<p>Some text about item %d. <a href="../items/%d.html#x">item</a></p>`, i, i)
	}
	sb.WriteString("</body></html>")
	page := sb.String()
	base, _ := url.Parse("http://example.com/dir/page.html")
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		doc, err := ExtractLinks(base, strings.NewReader(page))
		if err != nil || len(doc.Links) != 200 {
			b.Fatalf("%d links, %v", len(doc.Links), err)
		}
	}
}

// BenchmarkRobotsAllowed matches a path against a robots.txt of 100 rules
// with wildcards.
func BenchmarkRobotsAllowed(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("User-agent: *\n")
	for i := range 100 {
		fmt.Fprintf(&sb, "Disallow: /section-%d/*.php$\nAllow: /section-%d/public/\n", i, i)
	}
	r := ParseRobots([]byte(sb.String()), "drover")
	b.ReportAllocs()
	for b.Loop() {
		if !r.Allowed("/section-42/public/index.html?x=1") {
			b.Fatal("disallowed")
		}
	}
}
