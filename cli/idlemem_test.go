package cli

import "testing"

// TestIdleReturn: memory is returned in the first quiet interval after
// idleMemBurst bytes were allocated, once per burst, never while busy or
// after a small burst.
func TestIdleReturn(t *testing.T) {
	const mb = 1 << 20
	steps := []struct {
		alloc uint64 // allocated in the interval
		want  memReturn
	}{
		{0, returnNothing},       // idle from the start
		{10 * mb, returnNothing}, // a small burst
		{0, returnNothing},       // quiet: 10 MiB is not worth it
		{10 * mb, returnNothing}, // busy
		{10 * mb, returnNothing}, // still busy, 30 MiB since the start
		{mb / 8, returnAll},      // quiet after a burst: return
		{0, returnNothing},       // still quiet: already returned
		{20 * mb, returnNothing}, // a new burst
		{0, returnAll},           // over
		{200 * mb, returnNothing},
		{300 * mb, returnNothing}, // busy throughout
	}
	var r idleReturn
	total := uint64(12345)
	r.last = total
	for i, s := range steps {
		total += s.alloc
		if got := r.step(total, 0); got != s.want {
			t.Errorf("interval %d (%d B allocated): return %d, want %d", i, s.alloc, got, s.want)
		}
	}
}

// TestTrimOnGrowthOutsideGo: the C allocator is trimmed (and only it) when
// the memory outside the Go heap has grown by idleMemCGrowth since its
// lowest since the last return, never while it stays level, and growth
// counts again from what was resident after the trim.
func TestTrimOnGrowthOutsideGo(t *testing.T) {
	const mb = 1 << 20
	steps := []struct {
		resident uint64 // outside the Go heap in the interval
		after    uint64 // after a return (when one is wanted)
		want     memReturn
	}{
		{100 * mb, 0, returnNothing},      // the first sample is the base
		{110 * mb, 0, returnNothing},      // grown 10 MiB: not worth it
		{110 * mb, 0, returnNothing},      // level: nothing freed to give back
		{90 * mb, 0, returnNothing},       // dropped: the new lowest
		{105 * mb, 0, returnNothing},      // 15 MiB above the lowest
		{106 * mb, 95 * mb, returnCFree},  // 16 MiB above: trim; 95 MiB after
		{106 * mb, 0, returnNothing},      // 11 MiB above what the trim left
		{112 * mb, 112 * mb, returnCFree}, // 17 MiB above; the trim freed nothing
		{112 * mb, 0, returnNothing},      // level: no trim again
		{120 * mb, 0, returnNothing},      // 8 MiB above
		{128 * mb, 128 * mb, returnCFree}, // 16 MiB above
		{0, 0, returnNothing},             // not known
	}
	var r idleReturn
	for i, s := range steps {
		got := r.step(0, s.resident)
		if got != s.want {
			t.Errorf("interval %d (%d MiB outside Go): return %d, want %d", i, s.resident/mb, got, s.want)
		}
		if got != returnNothing {
			r.returned(s.after)
		}
	}
}
