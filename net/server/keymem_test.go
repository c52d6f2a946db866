package server

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"drover/coord/id"
)

// BenchmarkRequestedKeyMemory measures what a coordinator (memory store)
// holds per key a producer REQUESTed over the wire and still holds, in
// batches of 1000 (issue 21: at most 128 B RSS per requested key). It
// reports the Go heap in use per key and the test process's RSS growth per
// key (the ledger's big tables are outside the Go heap: package
// coord/offheap); docs/BENCHMARKS.md has the same read from `drover serve
// --store memory`.
//
//	DROVER_BENCH_KEYS=1000000 go test ./net/server -run '^$' -bench RequestedKeyMemory -benchtime 1x
func BenchmarkRequestedKeyMemory(b *testing.B) {
	n := benchSize("DROVER_BENCH_KEYS", 200_000)
	ctx := context.Background()
	for range b.N {
		s, p, stop := memServer(b, "producer")
		before, rss0 := heapBytes(), rssBytes()
		keys := make([]id.Key, 1000)
		for lo := 0; lo < n; lo += len(keys) {
			part := keys[:min(len(keys), n-lo)]
			for i := range part {
				part[i] = id.Key{Crawler: "crawl", Processor: "page", URL: fmt.Sprintf("http://mem.test/page/%d", lo+i)}
			}
			if _, err := p.Request(ctx, part); err != nil {
				b.Fatal(err)
			}
		}
		keys = nil
		after, rss1 := heapBytes(), rssBytes()
		b.ReportMetric((float64(after)-float64(before))/float64(n), "heap-B/key")
		b.ReportMetric((float64(rss1)-float64(rss0))/float64(n), "RSS-B/key")
		stop() // releases the keys: after the measure
		runtime.KeepAlive(s)
	}
}
