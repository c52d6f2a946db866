package clock

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func fired(tm Timer) bool {
	select {
	case <-tm.C():
		return true
	default:
		return false
	}
}

func TestFakeTimers(t *testing.T) {
	c := NewFake(t0)
	a, b := c.NewTimer(time.Second), c.NewTimer(3*time.Second)
	if d := <-c.Created(); d != time.Second {
		t.Fatalf("first timer announced as %v", d)
	}
	c.Advance(999 * time.Millisecond)
	if fired(a) || fired(b) || c.Pending() != 2 {
		t.Fatal("a timer fired early")
	}
	c.Advance(time.Millisecond)
	if !fired(a) || fired(b) || c.Pending() != 1 {
		t.Fatal("want the 1s timer fired, the 3s one pending")
	}
	if !b.Stop() || b.Stop() || c.Pending() != 0 {
		t.Fatal("Stop of a pending timer: want true once")
	}
	c.Advance(time.Hour)
	if fired(b) {
		t.Fatal("a stopped timer fired")
	}
	b.Reset(time.Minute)
	c.Advance(time.Minute)
	if !fired(b) || !c.Now().Equal(t0.Add(time.Second+time.Hour+time.Minute)) {
		t.Fatalf("reset timer did not fire; now %v", c.Now())
	}
	a.Reset(0)
	if !fired(a) {
		t.Fatal("a timer reset to 0 fires at once")
	}
	// A reset drops a firing nobody received.
	a.Reset(time.Second)
	c.Advance(time.Second)
	a.Reset(time.Second)
	if fired(a) {
		t.Fatal("a stale firing survived Reset")
	}
}

func TestSystem(t *testing.T) {
	var c Clock = System{}
	tm := c.NewTimer(time.Millisecond)
	select {
	case <-tm.C():
	case <-time.After(10 * time.Second):
		t.Fatal("system timer did not fire")
	}
	if c.Now().IsZero() {
		t.Fatal("zero time")
	}
}
