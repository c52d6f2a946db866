package tui

import (
	"testing"
	"time"

	"drover/admin"
)

// TestCrawlRate: pages/s is the change of a crawl's page count over at
// least a second of the coordinator's clock; a shorter gap keeps the last
// rate, and a count that went down (the crawl was redefined) starts over.
func TestCrawlRate(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var f crawlFigures
	step := func(pages int, at time.Duration, want float64, have bool) {
		t.Helper()
		f.apply([]admin.Crawl{{Name: "news", Pages: pages}}, nil, t0.Add(at))
		got, ok := f.rate["news"]
		if ok != have || got != want {
			t.Fatalf("after %d pages at +%v: rate %v (known %v), want %v (known %v)", pages, at, got, ok, want, have)
		}
	}
	step(10, 0, 0, false)                     // first sample: no rate yet
	step(12, 500*time.Millisecond, 0, false)  // under a second: wait
	step(30, 2*time.Second, 10, true)         // 20 pages in 2s
	step(31, 2500*time.Millisecond, 10, true) // under a second since: keeps 10
	step(36, 3*time.Second, 6, true)          // 6 pages in 1s
	step(2, 4*time.Second, 0, false)          // redefined: starts over
	step(2, 5*time.Second, 0, true)           // idle crawl: 0 pages/s
}
