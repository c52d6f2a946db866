package cli

import "testing"

// TestIdleReturn: memory is returned in the first quiet interval after
// idleMemBurst bytes were allocated, once per burst, never while busy or
// after a small burst.
func TestIdleReturn(t *testing.T) {
	const mb = 1 << 20
	steps := []struct {
		alloc uint64 // allocated in the interval
		want  bool
	}{
		{0, false},       // idle from the start
		{10 * mb, false}, // a small burst
		{0, false},       // quiet: 10 MiB is not worth it
		{10 * mb, false}, // busy
		{10 * mb, false}, // still busy, 30 MiB since the start
		{mb / 8, true},   // quiet after a burst: return
		{0, false},       // still quiet: already returned
		{20 * mb, false}, // a new burst
		{0, true},        // over
		{200 * mb, false},
		{300 * mb, false}, // busy throughout
	}
	var r idleReturn
	total := uint64(12345)
	r.last = total
	for i, s := range steps {
		total += s.alloc
		if got := r.step(total); got != s.want {
			t.Errorf("interval %d (%d B allocated): return %v, want %v", i, s.alloc, got, s.want)
		}
	}
}
