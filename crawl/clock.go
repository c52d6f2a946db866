package crawl

import "time"

// Clock is the time source of a Fetcher: the politeness delays, the
// robots.txt cache, Retry-After dates and fetch timings go through it, so
// that tests can drive time by hand. SystemClock is the real one.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a timer that fires once after d.
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer a Fetcher uses.
type Timer interface {
	// C returns the channel the timer fires on.
	C() <-chan time.Time
	// Stop stops the timer; it reports whether that prevented a firing.
	Stop() bool
}

// SystemClock is the wall clock of the machine.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// NewTimer returns a time.Timer.
func (SystemClock) NewTimer(d time.Duration) Timer { return sysTimer{time.NewTimer(d)} }

type sysTimer struct{ t *time.Timer }

// C returns the timer's channel.
func (t sysTimer) C() <-chan time.Time { return t.t.C }

// Stop stops the timer.
func (t sysTimer) Stop() bool { return t.t.Stop() }
