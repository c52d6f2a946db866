package server

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	"drover/coord"
	"drover/coord/id"
	"drover/net/client"
	"drover/net/wire"
	"drover/net/zsock"
)

// BenchmarkQueuedJobMemory measures the Go heap a queued job holds in a
// coordinator (memory store, no workers), by how its jobs were submitted:
// in batches of up to 10,000 (what drover submit - sends) or one per SUBMIT.
// Each job carries a 150-byte payload, as crawl seeds used to.
//
//	DROVER_BENCH_JOBS=200000 go test ./net/server -run '^$' -bench QueuedJobMemory -benchtime 1x
func BenchmarkQueuedJobMemory(b *testing.B) {
	n := 50_000
	if v, err := strconv.Atoi(os.Getenv("DROVER_BENCH_JOBS")); err == nil && v > 0 {
		n = v
	}
	payload := []byte(fmt.Sprintf(`{"depth":0,"scope":"host","seed":"%0130d"}`, 0))
	for _, how := range []string{"batched", "one-by-one"} {
		b.Run(how, func(b *testing.B) {
			for range b.N {
				heap := func() uint64 {
					runtime.GC()
					runtime.GC()
					var ms runtime.MemStats
					runtime.ReadMemStats(&ms)
					return ms.HeapAlloc
				}
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
				before := heap()
				items := make([]wire.SubmitItem, n)
				for i := range items {
					items[i] = wire.SubmitItem{Key: id.Key{Crawler: "crawl", Processor: "page", URL: fmt.Sprintf("http://mem.test/page/%d", i)}, Payload: payload}
				}
				if how == "batched" {
					if _, err := p.Submit(ctx, items); err != nil {
						b.Fatal(err)
					}
				} else {
					for i := range items {
						if _, err := p.Submit(ctx, items[i:i+1]); err != nil {
							b.Fatal(err)
						}
					}
				}
				p.Close()
				items = nil
				// A few more steps, as a coordinator that goes on has: what
				// the last step needed is released by the next.
				q, err := client.Dial(ctx, client.Options{Connect: s.PeersEndpoint(), ID: "after"})
				if err != nil {
					b.Fatal(err)
				}
				for i := range 3 {
					if _, err := q.Request(ctx, []id.Key{{Crawler: "x", Processor: "y", URL: fmt.Sprintf("http://after.test/%d", i)}}); err != nil {
						b.Fatal(err)
					}
				}
				q.Close()
				after := heap()
				if f := os.Getenv("DROVER_BENCH_HEAPPROFILE"); f != "" {
					out, _ := os.Create(f + "." + how)
					pprof.Lookup("heap").WriteTo(out, 0)
					out.Close()
				}
				b.ReportMetric(float64(after-before)/float64(n), "B/job")
				cancel()
				<-ran
				runtime.KeepAlive(s)
			}
		})
	}
}
