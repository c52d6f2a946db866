package server

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"drover/coord"
	"drover/coord/broker"
	"drover/coord/id"
	"drover/net/client"
	"drover/net/wire"
	"drover/net/worker"
	"drover/net/zsock"
	"drover/store"
)

// cpuTime is the CPU time (user and system) the process has used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkEndToEndStore is BenchmarkEndToEnd of net/worker (one producer
// submits b.N jobs, 4 no-op workers with 64 slots do them, over TCP
// loopback) with the coordinator in memory and durable on a store in a
// temporary directory under each sync policy, in the same run:
//
//	go test -run '^$' -bench EndToEndStore ./net/server
func BenchmarkEndToEndStore(b *testing.B) {
	// batch+cache is serve's default: sync=batch and a bounded done set
	// (store.done_cache), so every new key is also looked up in the store.
	// batch+output has every job return 256 bytes of output, and
	// batch+results keeps those results in the store (serve's default,
	// results.go): their difference is the cost of keeping results.
	// batch+2ms: sync=batch with store.sync_interval 2ms (five times as
	// many fsyncs; no JOB waits for one once its job's creation is durable).
	for _, name := range []string{"memory", "none", "batch", "always", "batch+cache", "batch+output", "batch+results", "batch+2ms"} {
		b.Run("store="+name, func(b *testing.B) {
			// b.Run calls this more than once (N=1 first): the variant is
			// decoded from name, not from a variable the first call changed.
			policy := name
			var interval time.Duration
			opts := Options{Peers: zsock.Ephemeral, Admin: zsock.Ephemeral, Events: "-",
				Coord: coord.Config{Heartbeat: time.Second}}
			var output []byte
			switch policy {
			case "batch+cache":
				policy = "batch"
				opts.Coord.Ledger.DoneCache = 1_000_000
			case "batch+results":
				opts.Results = &ResultsOptions{}
				fallthrough
			case "batch+output":
				policy = "batch"
				output = make([]byte, 256)
				for i := range output {
					output[i] = 'a' + byte(i%26)
				}
			case "batch+2ms":
				policy, interval = "batch", 2*time.Millisecond
			}
			if policy != "memory" {
				st, err := store.Open(store.Options{Path: filepath.Join(b.TempDir(), "store"), Sync: store.Sync(policy), SyncInterval: interval})
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				opts.Store = st
			}
			var n atomic.Int64
			want := int64(b.N)
			done := make(chan struct{}, 1)
			opts.OnFinished = func(broker.Finished) {
				if n.Add(1) == want {
					done <- struct{}{}
				}
			}
			s, err := New(opts)
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			ran := make(chan error, 1)
			go func() { ran <- s.Run(ctx) }()
			defer func() { cancel(); <-ran }()

			adm, err := client.DialAdmin(ctx, client.AdminOptions{Connect: s.AdminEndpoint()})
			if err != nil {
				b.Fatal(err)
			}
			defer adm.Close()
			wctx, wcancel := context.WithCancel(ctx)
			workers := make(chan error, 4)
			for i := range 4 {
				go func() {
					workers <- worker.Run(wctx, worker.Options{Connect: s.PeersEndpoint(), ID: fmt.Sprintf("noop-%d", i), Slots: 64},
						func(context.Context, worker.Job) worker.Result { return worker.Result{Output: output} })
				}()
			}
			defer func() {
				wcancel()
				for range 4 {
					<-workers
				}
			}()
			for deadline := time.Now().Add(time.Minute); ; {
				tot, err := adm.Totals(ctx)
				if err == nil && tot.WorkersIdle == 4 {
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("4 workers not registered within a minute: %+v %v", tot, err)
				}
				time.Sleep(10 * time.Millisecond) // polling with a deadline
			}
			p, err := client.Dial(ctx, client.Options{Connect: s.PeersEndpoint(), ID: "producer"})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			items := make([]wire.SubmitItem, b.N)
			for i := range items {
				items[i] = wire.SubmitItem{Key: id.Key{Crawler: "bench", Processor: "noop", URL: fmt.Sprintf("http://bench.test/%d", i)}}
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime(b)
			if _, err := p.Submit(ctx, items); err != nil {
				b.Fatal(err)
			}
			select {
			case <-done:
			case <-ctx.Done():
				b.Fatal("jobs not done in time")
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
			// CPU per job (the whole process: producer, workers, store):
			// on a loaded machine the run waits for a core more than it
			// runs, and jobs/s follows the load; CPU per job does not.
			b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N)/1e3, "cpu-us/job")
		})
	}
}
