package backoff

import (
	"testing"
	"time"
)

func TestDelay(t *testing.T) {
	p := Policy{Start: time.Second, Cap: 10 * time.Second}
	for n, want := range map[int]time.Duration{0: time.Second, 1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second, 1000: 10 * time.Second} {
		if got := p.Delay(n, nil); got != want {
			t.Errorf("Delay(%d) = %v, want %v", n, got, want)
		}
	}
	// Jitter spreads by up to ±Jitter and never passes the cap.
	p.Jitter = 0.25
	for _, tc := range []struct {
		n    int
		r    float64
		want time.Duration
	}{
		{1, 0, 750 * time.Millisecond},
		{1, 0.5, time.Second},
		{2, 0.999999, 2*time.Second + 499999*time.Microsecond + 996*time.Nanosecond},
		{10, 0.99, 10 * time.Second},
		{10, 0, 7500 * time.Millisecond},
	} {
		if got := p.Delay(tc.n, func() float64 { return tc.r }); got.Round(time.Millisecond) != tc.want.Round(time.Millisecond) {
			t.Errorf("Delay(%d) with rnd %v = %v, want %v", tc.n, tc.r, got, tc.want)
		}
	}
	// Without jitter the random source is never asked.
	Policy{Start: time.Second, Cap: time.Minute}.Delay(3, func() float64 { t.Fatal("rnd called without jitter"); return 0 })
}
