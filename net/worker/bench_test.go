package worker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"drover/admin"
	"drover/coord/broker"
	"drover/coord/id"
	"drover/net/client"
	"drover/net/internal/testsrv"
	"drover/net/wire"
)

// benchRun numbers benchmark runs so that every run's keys are new.
var benchRun atomic.Int64

// benchServer starts a server whose finished jobs are counted; done is
// signalled when the count reaches want.
func benchServer(b *testing.B, want int64) (*testsrv.Server, <-chan struct{}) {
	b.Helper()
	var n atomic.Int64
	done := make(chan struct{}, 1)
	// Gather as drover serve does by default (peers.gather).
	s := testsrv.Start(b, testsrv.Options{Heartbeat: time.Second, NoEvents: true, Gather: 100 * time.Microsecond, OnFinished: func(broker.Finished) {
		if n.Add(1) == want {
			done <- struct{}{}
		}
	}})
	return s, done
}

// BenchmarkEndToEnd is drover's dispatch end to end over TCP loopback:
// one producer submits b.N jobs (the client batches and pipelines them),
// the coordinator dispatches them to 4 no-op workers, their results come
// back and the jobs are done. It reports jobs/s, to compare with
// zsock's BenchmarkEchoBaseline run in the same invocation:
//
//	go test -run '^$' -bench 'Echo|EndToEnd' ./net/...
func BenchmarkEndToEnd(b *testing.B) {
	for _, slots := range []int{1, 64} {
		b.Run(fmt.Sprintf("slots=%d", slots), func(b *testing.B) {
			s, done := benchServer(b, int64(b.N))
			adm := dialAdmin(b, s, client.AdminOptions{})
			for i := range 4 {
				runWorker(b, s.PeersEndpoint(), Options{ID: fmt.Sprintf("noop-%d", i), Slots: slots},
					func(context.Context, Job) Result { return Result{} })
			}
			totals(b, adm, "4 workers registered", func(t admin.Totals) bool { return t.WorkersIdle == 4 })
			p := dialProducer(b, s)
			run := benchRun.Add(1)
			items := make([]wire.SubmitItem, b.N)
			for i := range items {
				items[i] = wire.SubmitItem{Key: id.Key{Crawler: "bench", Processor: "noop",
					URL: fmt.Sprintf("http://bench.test/%d/%d", run, i)}}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			b.ReportAllocs()
			b.ResetTimer()
			st, err := p.Submit(ctx, items)
			if err != nil {
				b.Fatal(err)
			}
			select {
			case <-done:
			case <-ctx.Done():
				b.Fatal("jobs not done in time")
			}
			b.StopTimer()
			for i, x := range st {
				if x.Status != wire.SubmitAccepted {
					b.Fatalf("job %d: %+v, want accepted", i, x)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// BenchmarkEndToEndDedup is the ledger over the wire: REQUEST batches of
// 1000 new URLs from 4 goroutines sharing one client, b.N URLs in all. It
// reports URLs/s.
func BenchmarkEndToEndDedup(b *testing.B) {
	const batch = 1000
	s, _ := benchServer(b, -1)
	p := dialProducer(b, s)
	run := benchRun.Add(1)
	keys := make([]id.Key, b.N)
	for i := range keys {
		keys[i] = id.Key{Crawler: "bench", Processor: "dedup", URL: fmt.Sprintf("http://dedup.test/%d/%d", run, i)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	b.ReportAllocs()
	b.ResetTimer()
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				lo := int(next.Add(batch)) - batch
				if lo >= len(keys) {
					return
				}
				part := keys[lo:min(lo+batch, len(keys))]
				vs, err := p.Request(ctx, part)
				if err != nil {
					errs <- err
					return
				}
				if vs[0].Verdict != wire.VerdictOK {
					errs <- fmt.Errorf("verdict %+v for a new key, want ok", vs[0])
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "URLs/s")
}

// BenchmarkEndToEndLatency is one job at a time through an idle system
// (one no-op worker, default settings but the test server's 1 s
// heartbeat and serve's default gather of 100 µs): the time from Submit to
// the coordinator recording the job done. The time is read in the
// coordinator's OnFinished callback, on the reactor goroutine as it
// records the job, and handed to the benchmark with the wake-up; nothing
// yields to hurry that wake-up, and its delay is kept out of the latency
// (reported apart as p50-seen-µs: Submit to the benchmark goroutine
// running again, which is what a caller polling for the job would add).
// It reports the median and 99th percentile.
func BenchmarkEndToEndLatency(b *testing.B) {
	finished := make(chan time.Time, 1)
	// Gather as drover serve does by default (peers.gather).
	s := testsrv.Start(b, testsrv.Options{Heartbeat: time.Second, NoEvents: true, Gather: 100 * time.Microsecond, OnFinished: func(broker.Finished) {
		finished <- time.Now()
	}})
	adm := dialAdmin(b, s, client.AdminOptions{})
	runWorker(b, s.PeersEndpoint(), Options{ID: "noop"}, func(context.Context, Job) Result { return Result{} })
	totals(b, adm, "worker registered", func(t admin.Totals) bool { return t.WorkersIdle == 1 })
	p := dialProducer(b, s)
	run := benchRun.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	lat, seen := make([]time.Duration, b.N), make([]time.Duration, b.N)
	item := []wire.SubmitItem{{Key: id.Key{Crawler: "bench", Processor: "latency"}}}
	b.ResetTimer()
	for i := range b.N {
		item[0].Key.URL = fmt.Sprintf("http://latency.test/%d/%d", run, i)
		t0 := time.Now()
		if _, err := p.Submit(ctx, item); err != nil {
			b.Fatal(err)
		}
		select {
		case at := <-finished:
			lat[i], seen[i] = at.Sub(t0), time.Since(t0)
		case <-ctx.Done():
			b.Fatal("job not done in time")
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	slices.Sort(seen)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-µs") // a lost wake-up would show here (100 ms and more)
	b.ReportMetric(float64(seen[len(seen)/2].Microseconds()), "p50-seen-µs")
}
