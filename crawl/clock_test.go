package crawl

import (
	"testing"
	"time"

	"drover/clock"
)

// fakeClock is drover/clock's Fake with the helpers these tests use.
type fakeClock struct{ *clock.Fake }

func newFakeClock() *fakeClock {
	return &fakeClock{clock.NewFake(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))}
}

// pending is the number of timers not yet fired or stopped.
func (c *fakeClock) pending() int { return c.Pending() }

// waitTimer returns the duration of the next timer created, failing the
// test if none is created within the deadline.
func (c *fakeClock) waitTimer(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-c.Created():
		return d
	case <-time.After(5 * time.Second):
		t.Fatal("no timer was created within 5s")
		return 0
	}
}
