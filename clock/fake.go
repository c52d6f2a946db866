package clock

import (
	"sync"
	"time"
)

// Fake is a Clock driven by hand: time moves only on Advance, which fires
// the timers that are due. Every NewTimer and Reset is announced on
// Created (with its duration), so tests learn that something is waiting
// without sleeping. It is safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	created chan time.Duration
}

// NewFake returns a Fake clock at start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, created: make(chan time.Duration, 1024)}
}

// Now returns the fake time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer that fires when the fake time reaches now + d
// (at once when d <= 0).
func (c *Fake) NewTimer(d time.Duration) Timer {
	t := &fakeTimer{c: c, ch: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

// Created receives the duration of every timer made or reset (dropped
// when nobody reads and 1024 are waiting).
func (c *Fake) Created() <-chan time.Duration { return c.created }

// Advance moves time on by d and fires every timer due by then.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if !t.at.After(c.now) {
			t.fire(c.now)
		} else {
			kept = append(kept, t)
		}
	}
	clear(c.timers[len(kept):])
	c.timers = kept
}

// Pending is the number of timers not yet fired or stopped.
func (c *Fake) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

type fakeTimer struct {
	c  *Fake
	at time.Time
	ch chan time.Time
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

// fire delivers now unless a firing is already waiting.
func (t *fakeTimer) fire(now time.Time) {
	select {
	case t.ch <- now:
	default:
	}
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return t.unlink()
}

func (t *fakeTimer) unlink() bool {
	for i, x := range t.c.timers {
		if x == t {
			t.c.timers = append(t.c.timers[:i], t.c.timers[i+1:]...)
			return true
		}
	}
	return false
}

func (t *fakeTimer) Reset(d time.Duration) {
	c := t.c
	c.mu.Lock()
	t.unlink()
	select { // no stale firing after a reset, as time.Timer since Go 1.23
	case <-t.ch:
	default:
	}
	t.at = c.now.Add(d)
	if d <= 0 {
		t.fire(c.now)
	} else {
		c.timers = append(c.timers, t)
	}
	c.mu.Unlock()
	select {
	case c.created <- d:
	default:
	}
}
