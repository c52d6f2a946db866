package server

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"drover/coord"
	"drover/coord/id"
	"drover/net/client"
	"drover/net/zsock"
)

// BenchmarkRequestedKeyMemory measures what a coordinator (memory store)
// holds per key a producer REQUESTed over the wire and still holds, in
// batches of 1000 (issue 21: at most 128 B RSS per requested key). It
// reports the Go heap in use per key and the test process's RSS growth per
// key (the ledger's big tables are outside the Go heap: coord/ledger's
// rawmem.go); docs/BENCHMARKS.md has the same read from `drover serve
// --store memory`.
//
//	DROVER_BENCH_KEYS=1000000 go test ./net/server -run '^$' -bench RequestedKeyMemory -benchtime 1x
func BenchmarkRequestedKeyMemory(b *testing.B) {
	n := 200_000
	if v, err := strconv.Atoi(os.Getenv("DROVER_BENCH_KEYS")); err == nil && v > 0 {
		n = v
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	rss := func() uint64 {
		st, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return 0
		}
		for line := range strings.Lines(string(st)) {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				return kb << 10
			}
		}
		return 0
	}
	for range b.N {
		s, err := New(Options{Peers: zsock.Ephemeral, Admin: zsock.Ephemeral, Events: "-", Coord: coord.Config{Heartbeat: time.Second}})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- s.Run(ctx) }()
		p, err := client.Dial(ctx, client.Options{Connect: s.PeersEndpoint(), ID: "producer"})
		if err != nil {
			b.Fatal(err)
		}
		before, rss0 := heap(), rss()
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
		after, rss1 := heap(), rss()
		b.ReportMetric((float64(after)-float64(before))/float64(n), "heap-B/key")
		b.ReportMetric((float64(rss1)-float64(rss0))/float64(n), "RSS-B/key")
		p.Close() // releases the keys: after the measure
		cancel()
		<-ran
		runtime.KeepAlive(s)
	}
}
