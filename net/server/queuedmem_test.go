package server

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"

	"drover/coord/id"
	"drover/net/client"
	"drover/net/wire"
)

// BenchmarkQueuedJobMemory measures the Go heap a queued job holds in a
// coordinator (memory store, no workers), by how its jobs were submitted:
// in batches of up to 10,000 (what drover submit - sends) or one per SUBMIT.
// Each job carries a 150-byte payload, as crawl seeds used to.
//
//	DROVER_BENCH_JOBS=200000 go test ./net/server -run '^$' -bench QueuedJobMemory -benchtime 1x
func BenchmarkQueuedJobMemory(b *testing.B) {
	n := benchSize("DROVER_BENCH_JOBS", 50_000)
	payload := []byte(fmt.Sprintf(`{"depth":0,"scope":"host","seed":"%0130d"}`, 0))
	ctx := context.Background()
	for _, how := range []string{"batched", "one-by-one"} {
		b.Run(how, func(b *testing.B) {
			for range b.N {
				s, p, stop := memServer(b, "producer")
				before := heapBytes()
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
				moreSteps(b, s)
				after := heapBytes()
				heapProfile("." + how)
				b.ReportMetric((float64(after)-float64(before))/float64(n), "B/job")
				stop()
				runtime.KeepAlive(s)
			}
		})
	}
}

// BenchmarkQueuedJobEmpty measures what a queued job with an empty payload
// costs a coordinator (memory store, no workers), with keys shaped as
// bench/peers sends them (URLs of about 55 bytes over 1,000 hosts),
// submitted in batches of 100,000: Go heap in use and RSS growth per job
// (issue 21's figure; RSS here includes the test's own client).
//
//	DROVER_BENCH_JOBS=1000000 go test ./net/server -run '^$' -bench QueuedJobEmpty -benchtime 1x
func BenchmarkQueuedJobEmpty(b *testing.B) {
	n := benchSize("DROVER_BENCH_JOBS", 200_000)
	ctx := context.Background()
	for range b.N {
		s, p, stop := memServer(b, "producer")
		before, rss0 := heapBytes(), rssBytes()
		const chunk = 100_000
		items := make([]wire.SubmitItem, 0, chunk)
		for lo := 0; lo < n; lo += chunk {
			items = items[:0]
			for i := lo; i < min(lo+chunk, n); i++ {
				items = append(items, wire.SubmitItem{Key: id.Key{Crawler: "bench", Processor: "fetch",
					URL: fmt.Sprintf("https://host-%d.example.com/section/%d/page-%d.html", i%1000, i%997, i)}})
			}
			if _, err := p.Submit(ctx, items); err != nil {
				b.Fatal(err)
			}
		}
		items = nil
		moreSteps(b, s)
		after, rss1 := heapBytes(), rssBytes()
		heapProfile("")
		b.ReportMetric((float64(after)-float64(before))/float64(n), "heapB/job")
		b.ReportMetric((float64(rss1)-float64(rss0))/float64(n), "rssB/job")
		stop()
		runtime.KeepAlive(s)
	}
}

// moreSteps runs a few more steps, as a coordinator that goes on has: what
// the last step needed is released by the next.
func moreSteps(b *testing.B, s *Server) {
	ctx := context.Background()
	q, err := client.Dial(ctx, client.Options{Connect: s.PeersEndpoint(), ID: "after"})
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	for i := range 3 {
		if _, err := q.Request(ctx, []id.Key{{Crawler: "x", Processor: "y", URL: fmt.Sprintf("http://after.test/%d", i)}}); err != nil {
			b.Fatal(err)
		}
	}
}

// heapProfile writes the heap profile to $DROVER_BENCH_HEAPPROFILE+suffix
// when that variable is set.
func heapProfile(suffix string) {
	if f := os.Getenv("DROVER_BENCH_HEAPPROFILE"); f != "" {
		out, err := os.Create(f + suffix)
		if err != nil {
			return
		}
		pprof.Lookup("heap").WriteTo(out, 0)
		out.Close()
	}
}
