package client

import (
	"errors"
	"testing"
	"time"

	"drover/clock"
	"drover/coord/id"
	"drover/net/internal/testsrv"
)

// TestTimeoutOnTheFakeClock: a call's Timeout runs on Options.Clock. With
// the coordinator gone and a Timeout of 7 s, the call fails with
// ErrTimeout once 7 s of the fake clock have passed, not before, in
// however little real time.
func TestTimeoutOnTheFakeClock(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := testsrv.Start(t, testsrv.Options{})
	c := dial(t, s, Options{Timeout: 7 * time.Second, Clock: clk, ReconnectMin: time.Hour, ReconnectMax: time.Hour})
	s.Stop()
	got := make(chan error, 1)
	go func() {
		_, err := c.Request(ctxT(t), []id.Key{key("http://fake.test/x")})
		got <- err
	}()
	// Advance only once the call's timer is armed (the connection's own
	// timers have other durations).
	armed := time.After(wait)
	for d := time.Duration(0); d != 7*time.Second; {
		select {
		case d = <-clk.Created():
		case <-armed:
			t.Fatal("the call never armed its 7 s timer on the fake clock")
		}
	}
	const step = 250 * time.Millisecond
	for elapsed := time.Duration(0); ; {
		if elapsed > time.Minute {
			t.Fatalf("no answer after %v of the fake clock; want ErrTimeout after 7 s", elapsed)
		}
		select {
		case err := <-got:
			if !errors.Is(err, ErrTimeout) {
				t.Fatalf("call with no coordinator: %v, want ErrTimeout", err)
			}
			if elapsed < 7*time.Second || elapsed > 8*time.Second {
				t.Fatalf("ErrTimeout after %v of the fake clock, want the 7 s Timeout (a step or two later at most)", elapsed)
			}
			return
		case <-time.After(5 * time.Millisecond):
		}
		clk.Advance(step)
		elapsed += step
	}
}
