package server

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"drover/coord"
	"drover/coord/id"
	"drover/coord/ledger"
	"drover/net/wire"
	"drover/net/zsock"
	"drover/store"
)

// benchDoneKey is the i-th done key of the benchmark store.
func benchDoneKey(i int) id.Key {
	return id.Key{Crawler: "c", Processor: "p", URL: "http://bench.test/page/" + strconv.Itoa(i)}
}

// loadDoneKeys writes n done key records into st in large batches (the
// store's sync policy should be none), then compacts it.
func loadDoneKeys(b *testing.B, st *store.Store, n int, at time.Time) {
	b.Helper()
	const per = 20_000
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for lo := 0; lo < n; lo += per {
		bt := st.NewBatch()
		for i := lo; i < min(lo+per, n); i++ {
			k := benchDoneKey(i)
			if err := bt.PutKey(&store.KeyRecord{FP: k.Fingerprint(), Key: k, State: store.KeyDone, At: at}); err != nil {
				b.Fatal(err)
			}
		}
		wg.Add(1)
		st.Apply(bt, func(err error) {
			if err != nil {
				mu.Lock()
				firstErr = err
				mu.Unlock()
			}
			wg.Done()
		})
	}
	wg.Wait()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	if err := st.Compact(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// heapInUse is the heap in use after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// newBenchServer creates (without running) a server on st whose done set
// keeps cache keys (0: all), restoring from st as serve does.
func newBenchServer(b *testing.B, st *store.Store, cache int) *Server {
	b.Helper()
	s, err := New(Options{
		Peers: zsock.Ephemeral, Admin: zsock.Ephemeral, Events: "-", Store: st,
		Coord: coord.Config{Ledger: ledger.Config{DoneCache: cache}},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.closeSockets)
	return s
}

// BenchmarkDoneSet10M fills a store with 10M done keys
// (DROVER_BENCH_DONE_KEYS overrides the count), then measures:
//
//   - memory/unbounded: the heap a coordinator restored from it holds with
//     store.done_cache 0 (every done key restored into memory);
//   - memory/bounded: the same with a cache of 1M keys (DROVER_BENCH_CACHE),
//     restored without the done keys, then after 1.2× the cache of keys
//     have been asked for and brought back from the store (the cache full);
//   - lookup/hit and lookup/miss: one REQUEST key through the lookup
//     (Unknown, store.LookupKeys, KnownDone) for a done key the
//     coordinator evicted, and for a key the store has never seen.
//
// Run it with -benchtime 1x for the memory figures (each restores the
// whole store once).
func BenchmarkDoneSet10M(b *testing.B) {
	n := 10_000_000
	if v, err := strconv.Atoi(os.Getenv("DROVER_BENCH_DONE_KEYS")); err == nil && v > 0 {
		n = v
	}
	cache := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("DROVER_BENCH_CACHE")); err == nil && v > 0 {
		cache = v
	}
	cache = min(cache, n)
	dir := b.TempDir()
	quiet := slog.New(slog.DiscardHandler)
	st, err := store.Open(store.Options{Path: dir, Sync: store.SyncNone, Log: quiet})
	if err != nil {
		b.Fatal(err)
	}
	at := time.Now().Add(-time.Hour)
	start := time.Now()
	loadDoneKeys(b, st, n, at)
	b.Logf("%d done keys written and compacted in %v", n, time.Since(start).Round(time.Millisecond))
	// Reopen, as serve would after a restart: the lookups start from a
	// cold block cache on compacted tables.
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	if st, err = store.Open(store.Options{Path: dir, Log: quiet}); err != nil {
		b.Fatal(err)
	}
	defer st.Close()

	b.Run("memory/unbounded", func(b *testing.B) {
		for range b.N {
			before := heapInUse()
			start := time.Now()
			s := newBenchServer(b, st, 0)
			restore := time.Since(start)
			held := heapInUse() - before
			if r := s.Restored(); r.KeysDone != n {
				b.Fatalf("restored %d done keys, want %d", r.KeysDone, n)
			}
			b.ReportMetric(float64(held)/(1<<20), "heap-MiB")
			b.ReportMetric(float64(held)/float64(n), "B/done-key")
			b.ReportMetric(restore.Seconds(), "restore-s")
			runtime.KeepAlive(s)
		}
	})
	b.Run("memory/bounded", func(b *testing.B) {
		for range b.N {
			before := heapInUse()
			start := time.Now()
			s := newBenchServer(b, st, cache)
			restore := time.Since(start)
			restored := heapInUse() - before
			// Ask for 1.2 × cache keys, as producers would: each is
			// brought back from the store; the oldest are evicted again.
			for i := 0; i < cache+cache/5; i += wire.MaxBatch {
				keys := make([]id.Key, 0, wire.MaxBatch)
				for j := i; j < min(i+wire.MaxBatch, cache+cache/5); j++ {
					keys = append(keys, benchDoneKey(j))
				}
				if err := s.lookupNow(keys); err != nil {
					b.Fatal(err)
				}
				s.c.Ready(time.Now())
				s.c.WritesDurable(s.c.WriteBatch())
			}
			full := heapInUse() - before
			dc, _ := s.c.DoneCache()
			if dc.InMemory > cache || dc.InMemory+dc.Stored != n {
				b.Fatalf("done cache %+v: want at most %d in memory, %d in all", dc, cache, n)
			}
			b.ReportMetric(float64(restored)/(1<<20), "restored-heap-MiB")
			b.ReportMetric(float64(full)/(1<<20), "full-heap-MiB")
			b.ReportMetric(float64(full)/float64(cache), "B/cached-key")
			b.ReportMetric(restore.Seconds(), "restore-s")
			runtime.KeepAlive(s)
		}
	})
	lookup := func(b *testing.B, key func(x uint64) id.Key, wantHit bool) {
		s := newBenchServer(b, st, cache)
		m := &wire.Request{Keys: make([]id.Key, 1)}
		x := uint64(0x9e3779b97f4a7c15)
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			m.Keys[0] = key(x)
			hits := s.dur.look.stats.Hits
			if err := s.lookupNow(m.Keys); err != nil {
				b.Fatal(err)
			}
			if got := s.dur.look.stats.Hits > hits; got != wantHit && s.c.Unknown(m.Keys, nil) != nil {
				b.Fatalf("lookup of %s: hit %v, want %v", m.Keys[0].URL, got, wantHit)
			}
			if i++; i%1000 == 0 { // as the reactor's steps would: evict what was brought back
				s.c.Ready(time.Now())
				s.c.WritesDurable(s.c.WriteBatch())
			}
		}
		l := s.dur.look.stats
		b.ReportMetric(float64(l.Hits)/float64(max(l.Lookups, 1)), "hit-ratio")
	}
	b.Run("lookup/hit", func(b *testing.B) {
		lookup(b, func(x uint64) id.Key { return benchDoneKey(int(x % uint64(n))) }, true)
	})
	b.Run("lookup/miss", func(b *testing.B) {
		lookup(b, func(x uint64) id.Key { return benchDoneKey(n + int(x%(1<<40))) }, false)
	})
}

// The benchmark's keys must look like real ones: check the loader once.
func TestBenchDoneKeyNormalised(t *testing.T) {
	k := benchDoneKey(7)
	nk, err := id.NewKey(k.Crawler, k.Processor, k.URL)
	if err != nil || nk != k {
		t.Fatalf("benchDoneKey(7) = %+v normalises to %+v, %v; want itself", k, nk, err)
	}
}

// lookupNow does on the calling goroutine what a parked message's lookup
// does (Unknown, store.LookupKeys, giveBack), for benchmarks of a server
// that is not running.
func (s *Server) lookupNow(keys []id.Key) error {
	fps := s.c.Unknown(keys, nil)
	ks := make([]store.KeyLookup, len(fps))
	for i, fp := range fps {
		ks[i].FP = fp
	}
	if err := s.dur.st.LookupKeys(ks); err != nil {
		return err
	}
	s.dur.look.giveBack(ks, nil)
	return nil
}
