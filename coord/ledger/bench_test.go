package ledger

import (
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"drover/coord/id"
)

// Benchmarks run the ledger in steady state on pools of benchPool keys; the
// work that resets a pool between rounds runs with the timer stopped.
// Each reports ops/s (the goal: >= 2M/s on one core for request,
// queue and done) and allocations.

const benchPool = 1 << 16

// benchKeys returns n distinct items. Fingerprints are random (the ledger
// never rehashes keys), keys carry a realistic URL.
func benchKeys(n int) []Item {
	rng := rand.New(rand.NewPCG(1, 2))
	items := make([]Item, n)
	for i := range items {
		binary.LittleEndian.PutUint64(items[i].FP[:8], rng.Uint64())
		binary.LittleEndian.PutUint64(items[i].FP[8:], rng.Uint64())
		items[i].Key = id.Key{Crawler: "news", Processor: "html", URL: "http://example.com/page"}
	}
	return items
}

func benchLedger(b *testing.B, cfg Config) *Ledger {
	b.Helper()
	l, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return l
}

func reportOps(b *testing.B, perOp int) {
	b.ReportMetric(float64(b.N*perOp)/b.Elapsed().Seconds(), "ops/s")
}

// drain empties the output buffers, as the reactor does after each poll.
func drain(l *Ledger, ans []Answer, evs []Event, wrs []Write) ([]Answer, []Event, []Write) {
	return l.TakeAnswers(ans[:0]), l.TakeEvents(evs[:0]), l.TakeWrites(wrs[:0])
}

// splitmix64 derives the i-th benchmark fingerprint half.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// nthFP is a distinct random-looking fingerprint for every i.
func nthFP(i uint64) id.Fingerprint {
	var fp id.Fingerprint
	binary.LittleEndian.PutUint64(fp[:8], splitmix64(i))
	binary.LittleEndian.PutUint64(fp[8:], splitmix64(i^0xabcdef))
	return fp
}

// rounds runs b.N operations op(l, j) in rounds of benchPool, each round on a
// fresh ledger prepared by setup with the timer stopped, draining the
// outputs every 256 operations as the reactor would after a poll.
func rounds(b *testing.B, cfg Config, setup func(l *Ledger), op func(l *Ledger, j int)) {
	var l *Ledger
	var ans []Answer
	var evs []Event
	var wrs []Write
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j := i % benchPool
		if j == 0 {
			b.StopTimer()
			l = benchLedger(b, cfg)
			setup(l)
			ans, evs, wrs = drain(l, ans, evs, wrs)
			b.StartTimer()
		}
		op(l, j)
		if j&255 == 255 {
			ans, evs, wrs = drain(l, ans, evs, wrs)
		}
	}
	b.StopTimer()
	reportOps(b, 1)
}

var benchCfg = Config{RequestTTL: 5 * time.Minute, DoneTTL: 24 * time.Hour, FailedTTL: time.Hour}

func BenchmarkRequest(b *testing.B) {
	items := benchKeys(benchPool)
	none := func(*Ledger) {}
	b.Run("new", func(b *testing.B) { // absent -> requested, into a growing table
		rounds(b, benchCfg, none, func(l *Ledger, j int) {
			l.Request(base, 1, uint64(j), items[j].Key, items[j].FP)
		})
	})
	b.Run("owner-again", func(b *testing.B) { // requested by the same session: OK
		rounds(b, benchCfg, func(l *Ledger) {
			for _, it := range items {
				l.Request(base, 1, 0, it.Key, it.FP)
			}
		}, func(l *Ledger, j int) {
			l.Request(base, 1, uint64(j), items[j].Key, items[j].FP)
		})
	})
	b.Run("queued", func(b *testing.B) { // No "queued"
		rounds(b, benchCfg, func(l *Ledger) {
			for _, it := range items {
				l.Restore(Write{Op: PutQueued, FP: it.FP, Key: it.Key, At: base})
			}
		}, func(l *Ledger, j int) {
			l.Request(base, 2, uint64(j), items[j].Key, items[j].FP)
		})
	})
	b.Run("done", func(b *testing.B) { // No "done"
		rounds(b, benchCfg, func(l *Ledger) {
			for _, it := range items {
				l.Restore(Write{Op: PutDone, FP: it.FP, At: base})
			}
		}, func(l *Ledger, j int) {
			l.Request(base, 2, uint64(j), items[j].Key, items[j].FP)
		})
	})
	b.Run("wait", func(b *testing.B) { // held by another session: join its FIFO
		rounds(b, benchCfg, func(l *Ledger) {
			for _, it := range items {
				l.Request(base, 1, 0, it.Key, it.FP)
			}
		}, func(l *Ledger, j int) {
			l.Request(base, 2, uint64(j), items[j].Key, items[j].FP)
		})
	})
}

func BenchmarkRequestBatchOf100(b *testing.B) {
	items := benchKeys(benchPool)
	const per = 100
	var res []Result
	var evs []Event
	var l *Ledger
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		j := (i * per) % (benchPool - benchPool%per)
		if j == 0 {
			b.StopTimer()
			l = benchLedger(b, benchCfg)
			b.StartTimer()
		}
		res = l.RequestBatch(base, 1, uint64(i), items[j:j+per], res[:0])
		evs = l.TakeEvents(evs[:0])
	}
	b.StopTimer()
	reportOps(b, per)
}

func BenchmarkQueue(b *testing.B) {
	items := benchKeys(benchPool)
	for _, persist := range []bool{false, true} {
		name := "memory"
		if persist {
			name = "persist"
		}
		cfg := benchCfg
		cfg.Persist = persist
		b.Run(name, func(b *testing.B) {
			rounds(b, cfg, func(l *Ledger) {
				for _, it := range items {
					l.Request(base, 1, 0, it.Key, it.FP)
				}
			}, func(l *Ledger, j int) {
				l.Queue(base, 1, items[j].FP)
			})
		})
	}
}

func BenchmarkDone(b *testing.B) {
	items := benchKeys(benchPool)
	b.Run("requested", func(b *testing.B) { // the usual path: a held key is finished
		rounds(b, benchCfg, func(l *Ledger) {
			for _, it := range items {
				l.Request(base, 1, 0, it.Key, it.FP)
			}
		}, func(l *Ledger, j int) {
			l.Done(base, items[j].Key, items[j].FP, DoneOK)
		})
	})
	b.Run("queued", func(b *testing.B) { // a queued key is finished
		rounds(b, benchCfg, func(l *Ledger) {
			for _, it := range items {
				l.Restore(Write{Op: PutQueued, FP: it.FP, Key: it.Key, At: base})
			}
		}, func(l *Ledger, j int) {
			l.Done(base, items[j].Key, items[j].FP, DoneOK)
		})
	})
	b.Run("absent", func(b *testing.B) { // done reported from outside
		rounds(b, benchCfg, func(*Ledger) {}, func(l *Ledger, j int) {
			l.Done(base, items[j].Key, items[j].FP, DoneOK)
		})
	})
	b.Run("ttl-steady", func(b *testing.B) { // each Done also sweeps what expired
		l := benchLedger(b, Config{DoneTTL: time.Second})
		now := base
		var evs []Event
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			now = now.Add(100 * time.Microsecond) // about 10k keys alive
			l.Done(now, id.Key{}, nthFP(uint64(i)), DoneOK)
			if i&255 == 255 {
				evs = l.TakeEvents(evs[:0])
			}
		}
		reportOps(b, 1)
	})
}

// BenchmarkPipeline is the ledger's life in a running crawl, in steady
// state: each iteration requests a new key, queues it, and marks done the
// key queued `live` iterations before (so that many keys are in flight and
// the live table churns), while done keys expire after a TTL chosen so that
// about `done` of them are held. Three ledger operations per iteration;
// ops/s counts operations. The large case is bound by cache misses in the
// 1M-key done table.
func BenchmarkPipeline(b *testing.B) {
	for _, c := range []struct {
		name       string
		live, done int
	}{
		{"live=1k,done=16k", 1 << 10, 1 << 14},
		{"live=64k,done=1M", 1 << 16, 1 << 20},
	} {
		b.Run(c.name, func(b *testing.B) {
			const step = time.Millisecond
			l := benchLedger(b, Config{RequestTTL: 5 * time.Minute, DoneTTL: time.Duration(c.done) * step})
			now := base
			k := id.Key{Crawler: "news", Processor: "html", URL: "http://example.com/page"}
			var evs []Event
			warm := c.live + 2*c.done // reach the steady state before timing
			b.ReportAllocs()
			for i := 0; i < warm+b.N; i++ {
				if i == warm {
					b.ResetTimer()
				}
				now = now.Add(step)
				fp := nthFP(uint64(i))
				l.Request(now, 1, uint64(i), k, fp)
				l.Queue(now, 1, fp)
				if i >= c.live {
					l.Done(now, k, nthFP(uint64(i-c.live)), DoneOK)
				}
				if i&255 == 255 {
					evs = l.TakeEvents(evs[:0])
				}
			}
			b.StopTimer()
			reportOps(b, 3)
			cs := l.Counts()
			b.ReportMetric(float64(cs.Queued), "live-keys")
			b.ReportMetric(float64(cs.Done), "done-keys")
		})
	}
}

// doneSetBytesPerKey marks n random keys done in a fresh ledger and returns
// the heap growth per key, measured with runtime.MemStats after a GC.
func doneSetBytesPerKey(tb testing.TB, n int, cfg Config) float64 {
	tb.Helper()
	fps := make([]id.Fingerprint, n)
	for i := range fps {
		fps[i] = nthFP(uint64(i))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	l, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	for i := range fps {
		l.Done(base, id.Key{}, fps[i], DoneOK)
		if i&1023 == 1023 {
			l.TakeEvents(nil)
		}
	}
	l.TakeEvents(nil)
	runtime.GC()
	runtime.ReadMemStats(&after)
	if got := l.Counts().Done; got != n {
		tb.Fatalf("done set holds %d keys, want %d", got, n)
	}
	runtime.KeepAlive(l)
	runtime.KeepAlive(fps)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
}

// BenchmarkDoneSetMemory reports the heap cost of the done set at 1M keys
// (goal: <= 64 B/key), without and with a TTL (which adds the sweep FIFO).
func BenchmarkDoneSetMemory(b *testing.B) {
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"forever", Config{}},
		{"ttl", Config{DoneTTL: 24 * time.Hour}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var perKey float64
			for i := 0; i < b.N; i++ {
				perKey = doneSetBytesPerKey(b, 1<<20, c.cfg)
			}
			b.ReportMetric(perKey, "B/key")
		})
	}
}
