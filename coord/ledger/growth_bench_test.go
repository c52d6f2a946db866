//go:build linux

package ledger

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"drover/coord/id"
)

// BenchmarkGrowthWorstOp requests b.N new keys one at a time into one
// ledger (its index grows all the way) and reports the slowest single
// Request and how many took over a millisecond, in the thread's CPU time
// (so that time the scheduler gave to other processes does not count):
// what a growth of the index costs the one operation that triggers it
// (issue 21: a whole-table rehash at 10M keys stalled the reactor for
// seconds). Run it with a fixed count, e.g. -benchtime 10000000x; the
// figures are measurements, not a pass/fail.
func BenchmarkGrowthWorstOp(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	l := benchLedger(b, Config{})
	k := id.Key{Crawler: "news", Processor: "html", URL: "http://example.com/page"}
	t0 := time.Unix(1_700_000_000, 0)
	var worst time.Duration
	var evs []Event
	slow := 0
	var ts unix.Timespec
	cpu := func() time.Duration {
		if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ts.Nano())
	}
	b.ResetTimer()
	for i := range b.N {
		fp := nthFP(uint64(i))
		start := cpu()
		l.Request(t0, 1, 1, k, fp)
		d := cpu() - start
		worst = max(worst, d)
		if d > time.Millisecond {
			slow++
		}
		if i&255 == 0 {
			evs = l.TakeEvents(evs[:0])
		}
	}
	b.ReportMetric(float64(worst.Microseconds()), "worst-cpu-µs")
	b.ReportMetric(float64(slow), "ops-over-1ms-cpu")
}
