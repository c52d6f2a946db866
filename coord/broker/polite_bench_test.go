package broker

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"drover/coord/id"
)

// BenchmarkDispatchHosts measures dispatch decisions per second with the
// same backlog (200,000 queued jobs) spread over 1 host or over 100,000
// hosts, politeness off and on (1 at once, 1 s apart: with 100,000 hosts
// every dispatch parks its host and another's timer wakes it), in cycles:
// 100 single-slot workers, Tick, Dispatch, 100 results, then 100 new jobs
// (round robin over the hosts) to keep the backlog. The clock advances 1 ms
// per cycle. decisions/s counts the decisions over the time of Tick,
// Dispatch and the results (what politeness and the number of hosts could
// cost); cycle-decisions/s over the whole cycle, the submits included
// (whose host lookup and per-host job index meet 100,000 hosts in memory
// rather than one in cache).
//
//	go test -run '^$' -bench DispatchHosts -benchtime 20000x ./coord/broker
func BenchmarkDispatchHosts(b *testing.B) {
	for _, c := range []struct {
		name  string
		hosts int
		lim   Limits
	}{
		{"hosts=1", 1, Limits{}},
		{"hosts=100000", 100_000, Limits{}},
		{"hosts=100000/polite", 100_000, Limits{PerHost: 1, MinDelay: time.Second}},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := newHostsBench(b, c.hosts, c.lim)
			decisions := 0
			var inDispatch time.Duration
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				decisions += s.decide(b)
				inDispatch += time.Since(t0)
				s.refill()
			}
			b.StopTimer()
			if c.lim.Off() && decisions < b.N*benchWorkers {
				b.Fatalf("only %d decisions in %d cycles", decisions, b.N)
			}
			b.ReportMetric(float64(decisions)/inDispatch.Seconds(), "decisions/s")
			b.ReportMetric(float64(decisions)/b.Elapsed().Seconds(), "cycle-decisions/s")
		})
	}
}

// BenchmarkHostMemory reports the heap cost of an idle host record: a
// host named by one job that finished and whose record was forgotten
// (what stays per host after its work), at 100,000 hosts, politeness on.
func BenchmarkHostMemory(b *testing.B) {
	const n = 100_000
	for range b.N {
		var m0, m1 runtime.MemStats
		hosts := make([]string, n)
		for i := range hosts {
			hosts[i] = "h" + strconv.Itoa(i) + ".example.com"
		}
		runtime.GC()
		runtime.ReadMemStats(&m0)
		br, err := New(Config{Jitter: -1, DoneRetention: 1, Politeness: Politeness{Default: Limits{PerHost: 2, MinDelay: time.Second}}})
		if err != nil {
			b.Fatal(err)
		}
		now := epoch
		if err := br.Register(now, 1, WorkerInfo{ID: "w", Slots: 1000}, nil); err != nil {
			b.Fatal(err)
		}
		var as []Assignment
		for i, h := range hosts {
			key := id.Key{Crawler: "c", Processor: "p", URL: "https://" + h + "/"}
			br.Submit(now, Spec{Key: key, Host: h})
			if i%1000 == 999 || i == n-1 {
				as = br.Dispatch(now, as[:0])
				for _, a := range as {
					br.Result(now, a.Session, Run{Job: a.Job, Attempt: a.Attempt}, Outcome{Kind: OK})
				}
				br.TakeEvents(nil)
				br.TakeFinished(nil)
			}
		}
		now = now.Add(time.Minute)
		br.Tick(now)
		if br.Count(Done) != n || len(br.hosts) != n {
			b.Fatalf("%d done over %d hosts, want %d each", br.Count(Done), len(br.hosts), n)
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/n, "B/idle-host")
		runtime.KeepAlive(br)
		runtime.KeepAlive(hosts)
	}
}
