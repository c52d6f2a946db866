package coord

import (
	"strconv"
	"testing"
	"time"

	"drover/coord/id"
)

// BenchmarkRequestStep is the coordinator's share of a REQUEST over the
// wire: one step per batch of 1,000 keys (Request, then Ready, as the
// reactor does), half of them new, half asked again (queued by then, so
// answered no), optionally queueing the new ones (REQUEST+QUEUE). It
// reports ns per decision and allocations per pair of batches; key events
// are off, as in a server nobody subscribes to them on.
func BenchmarkRequestStep(b *testing.B) {
	for _, queue := range []bool{false, true} {
		name := "request"
		if queue {
			name = "request+queue"
		}
		b.Run(name, func(b *testing.B) {
			c, err := New(Config{})
			if err != nil {
				b.Fatal(err)
			}
			c.PublishKeyEvents(false) // as a server with no key.* subscriber
			if _, err := c.Hello(t0, 1, Hello{Role: RoleProducer, ID: "p"}); err != nil {
				b.Fatal(err)
			}
			batches := make([][]id.Key, 2*b.N)
			for i := range batches {
				ks := make([]id.Key, 1000)
				for j := range ks {
					n := i
					if i%2 == 1 && j%2 == 0 {
						n = i - 1 // half the batch asks again for keys of the one before
					}
					ks[j] = id.Key{Crawler: "crawl", Processor: "page", URL: "http://a.test/" + strconv.Itoa(n) + "/" + strconv.Itoa(j)}
				}
				batches[i] = ks
			}
			var vs []Verdict
			var ok []id.Key
			now := t0
			b.ReportAllocs()
			b.ResetTimer()
			for i := range batches {
				now = now.Add(time.Millisecond)
				if vs, err = c.Request(now, 1, uint64(i), batches[i], vs[:0]); err != nil {
					b.Fatal(err)
				}
				if queue {
					ok = ok[:0]
					for j := range vs {
						if vs[j].Reason == "" {
							ok = append(ok, batches[i][j])
						}
					}
					if vs, err = c.Queue(now, 1, ok, vs[:0]); err != nil {
						b.Fatal(err)
					}
				}
				c.Ready(now)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2000*b.N), "ns/decision")
		})
	}
}
