package broker

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
	"time"

	"drover/admin"
	"drover/coord/id"
)

func benchBroker(tb testing.TB) *Broker {
	b, err := New(Config{Rand: rand.New(rand.NewPCG(1, 2)), MaxRequestFailures: 1})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func benchSpec(i int, hdr map[string]string) Spec {
	host := "h" + strconv.Itoa(i%1000) + ".example.com"
	key := id.Key{Crawler: "c", Processor: "p", URL: "https://" + host + "/page/" + strconv.Itoa(i)}
	return Spec{Key: key, Host: host, Headers: hdr}
}

// BenchmarkDispatch measures dispatch decisions per second with 100
// single-slot workers, in full cycles as the reactor runs them: submit 100
// jobs, dispatch them, report 100 results, drain events and finished jobs.
// decisions/s counts dispatches over the whole cycle's time.
func BenchmarkDispatch(b *testing.B) {
	cases := []struct {
		name    string
		classes []map[string]string // job header classes, round robin
		workers []map[string]string // worker headers, round robin
		indexes bool                // build every sort index, and query by each every 100 cycles (a console)
	}{
		{name: "plain"},
		{
			name:    "headers",
			classes: []map[string]string{nil, {"hwgroup": "gpu|cpu"}, {"threads": "4"}, {"hwgroup": "cpu", "threads": "8"}},
			workers: []map[string]string{{"hwgroup": "cpu", "threads": "8"}, {"hwgroup": "gpu", "threads": "16"}},
		},
		{name: "plain+indexes", indexes: true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			br := benchBroker(b)
			now := epoch
			const nw = 100
			for i := range nw {
				var hdr map[string]string
				if len(c.workers) > 0 {
					hdr = c.workers[i%len(c.workers)]
				}
				if err := br.Register(now, id.Session(i+1), WorkerInfo{ID: "w" + strconv.Itoa(i), Headers: hdr}, nil); err != nil {
					b.Fatal(err)
				}
			}
			if c.indexes {
				for k := sortURL; k <= sortRetryAt; k++ {
					br.tree(k)
				}
			}
			specs := make([]Spec, nw)
			for i := range specs {
				var hdr map[string]string
				if len(c.classes) > 0 {
					hdr = c.classes[i%len(c.classes)]
				}
				specs[i] = benchSpec(i, hdr)
			}
			var as []Assignment
			var fin []Finished
			var evs []admin.Event
			decisions := 0
			b.ReportAllocs()
			b.ResetTimer()
			for n := range b.N {
				if c.indexes && n%100 == 0 {
					for _, s := range []string{"url", "attempts", "failures", "retry_at"} {
						br.Jobs(admin.Query{Sort: s, Limit: 50})
					}
				}
				for i := range specs {
					br.Submit(now, specs[i])
				}
				as = br.Dispatch(now, as[:0])
				decisions += len(as)
				for _, a := range as {
					if _, err := br.Result(now, a.Session, Run{Job: a.Job, Attempt: a.Attempt}, Outcome{Kind: OK}); err != nil {
						b.Fatal(err)
					}
				}
				fin = br.TakeFinished(fin[:0])
				evs = br.TakeEvents(evs[:0])
			}
			b.StopTimer()
			if decisions < b.N*nw/2 {
				b.Fatalf("only %d decisions in %d cycles", decisions, b.N)
			}
			b.ReportMetric(float64(decisions)/b.Elapsed().Seconds(), "decisions/s")
		})
	}
}

// bigBroker builds a broker with n jobs over 1000 hosts, every record kept,
// in every state: about 30% done, 2% failed, 1% dispatched, 0.5% in
// back-off (the jobs of 5 throttled hosts) and the rest queued.
func bigBroker(tb testing.TB, n int) *Broker {
	br, err := New(Config{Rand: rand.New(rand.NewPCG(1, 2)), MaxRequestFailures: 1, DoneRetention: -1})
	if err != nil {
		tb.Fatal(err)
	}
	now := epoch
	for i := range n {
		br.Submit(now, benchSpec(i, nil))
		if i%1024 == 1023 {
			br.TakeEvents(nil)
		}
	}
	const nw, slots = 100, 100
	for i := range nw {
		if err := br.Register(now, id.Session(i+1), WorkerInfo{ID: "w" + strconv.Itoa(i), Slots: slots}, nil); err != nil {
			tb.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	var as []Assignment
	finished := 0
	for finished < n*32/100 {
		as = br.Dispatch(now, as[:0])
		for _, a := range as {
			var o Outcome
			switch x, h := r.IntN(1000), id.Host(a.Spec.Key.URL); {
			case h < "h5." && h >= "h0" && len(h) == len("h0.example.com"):
				o.Kind = Throttled // hosts h0..h4
			case x < 940:
				o.Kind = OK
			default:
				o.Kind = Internal
			}
			if _, err := br.Result(now, a.Session, Run{Job: a.Job, Attempt: a.Attempt}, o); err != nil {
				tb.Fatal(err)
			}
			finished++
		}
		br.TakeEvents(nil)
		br.TakeFinished(nil)
	}
	br.Dispatch(now, nil) // leave every slot busy
	br.TakeEvents(nil)
	return br
}

// BenchmarkJobsWindow measures one console window (50 rows) over 1M jobs
// for several sorts and filters, including offsets near the end.
func BenchmarkJobsWindow(b *testing.B) {
	const n = 1 << 20
	br := bigBroker(b, n)
	var t admin.Totals
	br.Totals(&t)
	b.Logf("jobs: queued %d dispatched %d backoff %d done %d failed %d", t.Queued, t.Dispatched, t.Backoff, t.Done, t.Failed)
	for k := sortURL; k <= sortRetryAt; k++ {
		br.tree(k) // built once, as the first query by that sort would
	}
	queries := []admin.Query{
		{},
		{Desc: true},
		{Offset: n - 60},
		{Filter: "state=queued", Offset: t.Queued - 60},
		{Filter: "state=failed", Offset: t.Failed / 2},
		{Filter: "state=done", Desc: true, Offset: t.Done / 3},
		{Filter: "state=backoff,failed", Desc: true},
		{Sort: "state", Offset: n / 2},
		{Sort: "url", Offset: n - 60},
		{Sort: "url", Filter: "state=dispatched", Offset: t.Dispatched / 2},
		{Sort: "attempts", Desc: true, Offset: 1000},
		{Sort: "failures", Desc: true},
		{Sort: "retry_at", Filter: "state=backoff", Desc: true},
		{Sort: "worker", Filter: "state=dispatched"},
		{Sort: "throttles", Desc: true},
		{Filter: "host=h7.example.com", Offset: 900},
		{Filter: "host=h7.example.com state=done", Desc: true},
		{Filter: "worker=w3"},
	}
	for _, q := range queries {
		q.Limit = 50
		name := fmt.Sprintf("sort=%s,desc=%v,filter=%q,offset=%d", q.Sort, q.Desc, q.Filter, q.Offset)
		b.Run(name, func(b *testing.B) {
			p := br.Jobs(q)
			if len(p.Jobs) == 0 {
				b.Fatalf("empty window (total %d)", p.Total)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				br.Jobs(q)
			}
		})
	}
	// Free text cannot use an index: a new text scans every job; the same
	// text again (scrolling, refreshing) uses the cached matches.
	b.Run("text-new", func(b *testing.B) {
		texts := []string{"/page/77", "/page/88"}
		for i := range b.N {
			br.Jobs(admin.Query{Filter: texts[i%2], Limit: 50})
		}
	})
	b.Run("text-again", func(b *testing.B) {
		q := admin.Query{Filter: "/page/77", Offset: 1000, Limit: 50}
		br.Jobs(q)
		b.ResetTimer()
		for range b.N {
			br.Jobs(q)
		}
	})
	b.Run("retries", func(b *testing.B) {
		q := admin.Query{Limit: 50}
		for range b.N {
			br.Retries(q)
		}
	})
}

// BenchmarkMemory reports the cost of a job at 1M jobs (queued, with an
// 40-byte URL and no payload), and with every sort index built: Go heap,
// and memory mapped outside it (package offheap: job records, URLs, key
// index; address space, touched or not).
func BenchmarkMemory(b *testing.B) {
	const n = 1 << 20
	for range b.N {
		var m0, m1, m2 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		br := benchBroker(b)
		now := epoch
		var evs []admin.Event
		for i := range n {
			br.Submit(now, benchSpec(i, nil))
			if i%1024 == 1023 {
				evs = br.TakeEvents(evs[:0]) // as the coordinator drains them
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		for k := sortURL; k <= sortRetryAt; k++ {
			br.tree(k)
		}
		runtime.GC()
		runtime.ReadMemStats(&m2)
		b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/n, "B/job")
		b.ReportMetric(float64(m2.HeapAlloc-m0.HeapAlloc)/n, "B/job+indexes")
		b.ReportMetric(float64(br.jobs.mem.Mapped())/n, "B/job-offheap")
		runtime.KeepAlive(br)
	}
}

// BenchmarkSubmit measures Submit alone.
func BenchmarkSubmit(b *testing.B) {
	br := benchBroker(b)
	specs := make([]Spec, 1024)
	for i := range specs {
		specs[i] = benchSpec(i, nil)
	}
	now := epoch.Add(time.Second)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		br.Submit(now, specs[i&1023])
		if i&1023 == 1023 {
			br.TakeEvents(nil)
		}
	}
}
