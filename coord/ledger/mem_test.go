package ledger

import (
	"bytes"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"drover/coord/id"
)

// memKeys is how many keys BenchmarkLedgerMemory holds: 1M, or
// DROVER_BENCH_KEYS.
func memKeys() int {
	if v, err := strconv.Atoi(os.Getenv("DROVER_BENCH_KEYS")); err == nil && v > 0 {
		return v
	}
	return 1 << 20
}

// heapInUse is the bytes of live heap objects after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// rssBytes is the process's resident set size (VmRSS of /proc/self/status),
// 0 where that file does not exist.
func rssBytes() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(string(rest)), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// wireBatch builds the keys of one REQUEST of up to 1000 keys the way the
// wire decoder does: every string of the batch is a slice of one
// allocation. URLs look like http://mem.test/page/N (26 to 30 bytes).
func wireBatch(lo, hi int, dst []Item) []Item {
	var sb strings.Builder
	starts := make([]int, 0, 3*(hi-lo)+1)
	for i := lo; i < hi; i++ {
		starts = append(starts, sb.Len())
		sb.WriteString("crawl")
		starts = append(starts, sb.Len())
		sb.WriteString("page")
		starts = append(starts, sb.Len())
		sb.WriteString("http://mem.test/page/")
		sb.WriteString(strconv.Itoa(i))
	}
	starts = append(starts, sb.Len())
	all := sb.String()
	dst = dst[:0]
	for j := 0; j < hi-lo; j++ {
		s := starts[3*j:]
		k := id.Key{Crawler: all[s[0]:s[1]], Processor: all[s[1]:s[2]], URL: all[s[2]:s[3]]}
		dst = append(dst, Item{Key: k, FP: k.Fingerprint()})
	}
	return dst
}

// BenchmarkLedgerMemory reports what the ledger holds per key, in each
// state, as Go heap in use and as RSS growth, for memKeys() keys fed in
// batches of 1000 as REQUEST brings them (issue 21's goal: at most 128 B
// RSS per requested key, the whole queued job at most 160 B):
//
//	go test ./coord/ledger -run '^$' -bench LedgerMemory -benchtime 1x
//	DROVER_BENCH_KEYS=10000000 go test ./coord/ledger -run '^$' -bench LedgerMemory/requested -benchtime 1x
//
// Run one state per process for a clean RSS figure (the Go runtime keeps
// freed pages for a while); the heap figure does not depend on it.
func BenchmarkLedgerMemory(b *testing.B) {
	for _, state := range []State{Requested, Queued, Done} {
		b.Run(state.String(), func(b *testing.B) {
			for range b.N {
				heap, mapped, rss := ledgerMemory(b, memKeys(), state)
				b.ReportMetric(heap, "heap-B/key")
				b.ReportMetric(mapped, "mapped-B/key")
				b.ReportMetric(rss, "RSS-B/key")
			}
		})
	}
}

// ledgerMemory returns, per key: the Go heap in use, the memory the
// ledger mapped outside it (package offheap; address space, touched or not) and
// the RSS growth.
func ledgerMemory(b *testing.B, n int, state State) (heap, mapped, rss float64) {
	b.Helper()
	h0, r0 := heapInUse(), rssBytes()
	l, err := New(Config{RequestTTL: 5 * time.Minute, DoneTTL: 24 * time.Hour, FailedTTL: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	var items []Item
	var res []Result
	var fps []id.Fingerprint
	now := base
	for lo := 0; lo < n; lo += 1000 {
		hi := min(lo+1000, n)
		items = wireBatch(lo, hi, items)
		switch state {
		case Requested, Queued:
			res = l.RequestBatch(now, 1, uint64(lo), items, res[:0])
			if state == Queued {
				fps = fps[:0]
				for i := range items {
					fps = append(fps, items[i].FP)
				}
				res = l.QueueBatch(now, 1, fps, res[:0])
			}
		case Done:
			l.DoneBatch(now, items, DoneOK)
		}
		l.TakeEvents(nil)
		l.TakeAnswers(nil)
	}
	clear(items)
	h1, r1 := heapInUse(), rssBytes()
	c := l.Counts()
	if got := c.Requested + c.Queued + c.Done; got != n {
		b.Fatalf("ledger holds %d keys (%+v), want %d", got, c, n)
	}
	m := l.recs.mem.Mapped()
	runtime.KeepAlive(l)
	return float64(h1-h0) / float64(n), float64(m) / float64(n), float64(int64(r1)-int64(r0)) / float64(n)
}
