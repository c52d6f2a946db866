package store

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"drover/coord/id"
)

// Benchmarks. The big ones load their data once per run:
//
//	go test ./store -run '^$' -bench 'Apply|Commit' -benchtime 2s
//	go test ./store -run '^$' -bench LookupKey10M -benchtime 2s -timeout 30m
//	go test ./store -run '^$' -bench Recover1M -benchtime 5x
//
// DROVER_BENCH_DONE_KEYS overrides the 10M keys of BenchmarkLookupKey10M;
// loading also stops after DROVER_BENCH_LOAD_TIME (default 2m).

// mix64 is SplitMix64's finaliser: distinct inputs, well-spread outputs.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// benchFP is a cheap stand-in for the fingerprint of key i (no SHA-256, so
// lookups measure the store, not the hash).
func benchFP(i uint64) id.Fingerprint {
	var fp id.Fingerprint
	binary.BigEndian.PutUint64(fp[:8], mix64(i))
	binary.BigEndian.PutUint64(fp[8:], mix64(i^0x5555555555555555))
	return fp
}

func benchKeyRec(i uint64, st KeyState) KeyRecord {
	return KeyRecord{
		FP:    benchFP(i),
		Key:   id.Key{Crawler: "crawl", Processor: "fetch", URL: "https://example.com/articles/" + strconv.FormatUint(i, 10)},
		State: st,
		At:    base.Add(time.Duration(i) * time.Millisecond),
	}
}

// applyPipelined applies batches of k done keys numbered from first, with
// Apply's own back-pressure bounding what is in flight, and waits for
// every acknowledgement.
func applyPipelined(tb testing.TB, s *Store, first, batches, k uint64) {
	var wg sync.WaitGroup
	var once sync.Once
	for n := range batches {
		b := s.NewBatch()
		for j := range k {
			r := benchKeyRec(first+n*k+j, KeyDone)
			_ = b.PutKey(&r)
		}
		wg.Add(1)
		s.Apply(b, func(err error) {
			if err != nil {
				once.Do(func() { tb.Errorf("Apply: %v", err) })
			}
			wg.Done()
		})
	}
	wg.Wait()
}

// BenchmarkApply: pipelined Apply throughput per policy and batch size (one
// op = one batch; records/s is the figure to read).
func BenchmarkApply(b *testing.B) {
	for _, p := range []Sync{SyncAlways, SyncBatch, SyncNone} {
		for _, k := range []uint64{1, 100} {
			b.Run(fmt.Sprintf("sync=%s/batch=%d", p, k), func(b *testing.B) {
				s := openT(b, Options{Path: b.TempDir(), Sync: p})
				st0 := s.WriteStats()
				b.ResetTimer()
				start := time.Now()
				applyPipelined(b, s, 0, uint64(b.N), k)
				el := time.Since(start)
				b.StopTimer()
				st := s.WriteStats()
				b.ReportMetric(float64(uint64(b.N)*k)/el.Seconds(), "records/s")
				b.ReportMetric(float64(st.Syncs-st0.Syncs)/el.Seconds(), "fsyncs/s")
				b.ReportMetric(float64(st.Batches-st0.Batches)/float64(max(1, st.Commits-st0.Commits)), "batches/commit")
			})
		}
	}
}

// BenchmarkCommit: one batch at a time (Commit waits for each), the
// latency a lone writer sees under each policy.
func BenchmarkCommit(b *testing.B) {
	for _, p := range []Sync{SyncAlways, SyncBatch, SyncNone} {
		b.Run("sync="+string(p), func(b *testing.B) {
			s := openT(b, Options{Path: b.TempDir(), Sync: p})
			b.ResetTimer()
			for i := range b.N {
				r := benchKeyRec(uint64(i), KeyDone)
				bt := s.NewBatch()
				_ = bt.PutKey(&r)
				if err := s.Commit(bt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// rssBytes reads VmRSS from /proc/self/status (0 where there is none).
func rssBytes() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkLookupKey10M loads 10M done keys (or what loads in the time
// limit), reopens the store, and measures LookupKey hits and misses, with
// the process's memory after loading.
func BenchmarkLookupKey10M(b *testing.B) {
	want := uint64(envInt("DROVER_BENCH_DONE_KEYS", 10_000_000))
	limit := time.Duration(envInt("DROVER_BENCH_LOAD_SECONDS", 120)) * time.Second
	dir, err := os.MkdirTemp("", "drover-store-bench-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s, err := Open(Options{Path: dir, Sync: SyncNone, Log: quiet})
	if err != nil {
		b.Fatal(err)
	}
	const k = 1000
	start := time.Now()
	var n uint64
	for n < want && time.Since(start) < limit {
		chunk := min(want-n, 100*k)
		applyPipelined(b, s, n, chunk/k, k)
		n += chunk / k * k
	}
	load := time.Since(start)
	// Steady state: everything in compacted tables, as in a coordinator
	// that has been up for a while.
	start = time.Now()
	if err := s.db.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := s.db.Compact(context.Background(), []byte{pfxInternal}, []byte{pfxEnd}, true); err != nil {
		b.Fatal(err)
	}
	compact := time.Since(start)
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	s, err = Open(Options{Path: dir, Log: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	du := dirBytes(dir)
	b.Logf("loaded %d done keys in %v (%.0f keys/s), compacted in %v; %d MiB on disk", n, load.Round(time.Millisecond), float64(n)/load.Seconds(), compact.Round(time.Millisecond), du>>20)

	lookup := func(b *testing.B, fp func(i uint64) id.Fingerprint, wantOK bool) {
		b.ReportAllocs()
		x := uint64(12345)
		for b.Loop() {
			x = mix64(x)
			_, _, ok, err := s.LookupKey(fp(x))
			if err != nil || ok != wantOK {
				b.Fatalf("LookupKey: ok %v, %v; want ok %v", ok, err, wantOK)
			}
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(n), "keys")
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
		b.ReportMetric(float64(rssBytes())/(1<<20), "rss-MiB")
	}
	b.Run("hit", func(b *testing.B) {
		lookup(b, func(x uint64) id.Fingerprint { return benchFP(x % n) }, true)
	})
	b.Run("miss", func(b *testing.B) {
		lookup(b, func(x uint64) id.Fingerprint { return benchFP(n + x%(1<<40)) }, false)
	})
}

// dirBytes is the size of the files directly in dir.
func dirBytes(dir string) int64 {
	es, _ := os.ReadDir(dir)
	var n int64
	for _, e := range es {
		if fi, err := e.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// BenchmarkRecover1M measures Recover over 1M records (900k done keys and
// 100k jobs with headers, payload and history), read back from disk.
func BenchmarkRecover1M(b *testing.B) {
	dir := b.TempDir()
	s, err := Open(Options{Path: dir, Sync: SyncNone, Log: quiet})
	if err != nil {
		b.Fatal(err)
	}
	const keys, jobs = 900_000, 100_000
	applyPipelined(b, s, 0, keys/1000, 1000)
	for j := uint64(1); j <= jobs; j += 1000 {
		bt := s.NewBatch()
		for i := j; i < j+1000; i++ {
			r := jobRec(i, JobQueued, base)
			_ = bt.PutJob(&r)
		}
		if err := s.Commit(bt); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	s = openT(b, Options{Path: dir})
	b.Logf("reopening the store of %d records took %v", keys+jobs, time.Since(start).Round(time.Millisecond))
	b.Run("all", func(b *testing.B) {
		for range b.N {
			st, err := s.Recover(func(Record) error { return nil })
			if err != nil {
				b.Fatal(err)
			}
			if st.Keys()+st.Jobs() != keys+jobs {
				b.Fatalf("recovered %+v, want %d records", st, keys+jobs)
			}
		}
		b.ReportMetric(float64(b.N*(keys+jobs))/b.Elapsed().Seconds(), "records/s")
	})
	b.Run("skip-done-keys", func(b *testing.B) {
		for range b.N {
			n := 0
			st, err := s.RecoverWith(RecoverOptions{SkipDoneKeys: true}, func(Record) error { n++; return nil })
			if err != nil {
				b.Fatal(err)
			}
			if n != jobs || st.KeysDone != keys {
				b.Fatalf("recovered %d (%+v), want %d jobs", n, st, jobs)
			}
		}
		b.ReportMetric(float64(b.N*(keys+jobs))/b.Elapsed().Seconds(), "records/s")
	})
}

// BenchmarkSweep expires 500k done keys (one op = one whole sweep) while a
// writer commits one batch at a time under sync=always, and reports the
// sweep rate and the slowest commit seen during it, beside the slowest
// commit of the same writer in the 2 s before the sweep: the sweep's steps
// interleave with writes instead of stalling them.
func BenchmarkSweep(b *testing.B) {
	const keys = 500_000
	for range b.N {
		b.StopTimer()
		dir := b.TempDir()
		s, err := Open(Options{Path: dir, Sync: SyncAlways, Log: quiet})
		if err != nil {
			b.Fatal(err)
		}
		applyPipelined(b, s, 0, keys/1000, 1000)
		var mu sync.Mutex
		var worst time.Duration
		stop := make(chan struct{})
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			for i := uint64(0); ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				r := benchKeyRec(keys+i, KeyQueued)
				bt := s.NewBatch()
				_ = bt.PutKey(&r)
				t0 := time.Now()
				if err := s.Commit(bt); err != nil {
					b.Error(err)
				}
				mu.Lock()
				worst = max(worst, time.Since(t0))
				mu.Unlock()
			}
		}()
		<-time.After(2 * time.Second) // the baseline: commits alone
		mu.Lock()
		baseline := worst
		worst = 0
		mu.Unlock()
		b.StartTimer()
		t0 := time.Now()
		n, err := s.Sweep(base.Add(time.Duration(keys)*time.Millisecond+2*time.Hour), time.Hour, time.Hour)
		el := time.Since(t0)
		b.StopTimer()
		close(stop)
		<-stopped
		if err != nil || n != keys {
			b.Fatalf("Sweep = %d, %v; want %d", n, err, keys)
		}
		b.ReportMetric(float64(n)/el.Seconds(), "records/s")
		b.ReportMetric(float64(worst.Microseconds())/1000, "max-commit-ms")
		b.ReportMetric(float64(baseline.Microseconds())/1000, "max-commit-before-ms")
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
