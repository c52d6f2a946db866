// Package clock is drover's one time source for the code around the pure
// core: the reactor (net/server), the crawl's fetcher (politeness, the
// robots.txt cache) and anything else that waits. Production code uses
// System; tests use a Fake, whose time moves only when they say, so that
// what depends on time is tested without sleeping.
//
// The coordinator core (coord) takes no clock: time comes in as values,
// read from one of these by its caller.
package clock

import "time"

// Clock tells the time and makes timers.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a timer that fires once after d.
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer drover uses.
type Timer interface {
	// C returns the channel the timer fires on.
	C() <-chan time.Time
	// Stop stops the timer; it reports whether that prevented a firing.
	Stop() bool
	// Reset makes the timer fire after d (stopped or fired first, as
	// time.Timer.Reset wants since Go 1.23: no stale value is received).
	Reset(d time.Duration)
}

// System is the machine's clock.
type System struct{}

// Now returns time.Now().
func (System) Now() time.Time { return time.Now() }

// NewTimer returns a time.Timer.
func (System) NewTimer(d time.Duration) Timer { return sysTimer{time.NewTimer(d)} }

type sysTimer struct{ t *time.Timer }

func (t sysTimer) C() <-chan time.Time   { return t.t.C }
func (t sysTimer) Stop() bool            { return t.t.Stop() }
func (t sysTimer) Reset(d time.Duration) { t.t.Reset(d) }
