// Package backoff is drover's one exponential back-off: a wait that starts
// at Start, doubles with each further attempt up to Cap, and may be spread
// by a random fraction so that many waiters do not wake together. The
// broker's per-host throttle back-off, its retry delays and its hold-back of
// worker ids that keep dying, the clients' reconnection and the notifier's
// retries all use it.
//
// It is pure: the random value comes from the caller (the coordinator's
// seeded source, or math/rand/v2), so the coordinator stays deterministic.
package backoff

import "time"

// Policy is an exponential back-off.
type Policy struct {
	Start time.Duration // the first wait (> 0)
	Cap   time.Duration // no wait is longer (>= Start)
	// Jitter spreads each wait by up to ±Jitter of its length (0: none;
	// below 1). The spread wait is capped too.
	Jitter float64
}

// Delay is the wait before retry n (1 for the first retry, after the
// first failure): Start × 2^(n-1), at most Cap, then spread by the jitter.
// rnd returns a value in [0, 1); it is called once, only when Jitter > 0.
func (p Policy) Delay(n int, rnd func() float64) time.Duration {
	d := p.Start
	for i := 1; i < n && d < p.Cap; i++ {
		d *= 2
	}
	d = min(d, p.Cap)
	if p.Jitter > 0 {
		f := 1 + p.Jitter*(2*rnd()-1)
		d = min(time.Duration(float64(d)*f), p.Cap)
	}
	return d
}
