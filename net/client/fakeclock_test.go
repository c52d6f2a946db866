package client

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"drover/clock"
	"drover/coord/id"
	"drover/net/internal/testsrv"
	"drover/net/wire"
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

// TestResentRequestWaitsAfresh: Timeout bounds each wait for a reply from
// the time the request is sent. A SUBMIT unanswered for 5 s of a 7 s
// Timeout when its session ends is sent again on the next session, and
// waits 7 s afresh there: answered 5 s after the resend (10 s after the
// first send), the call succeeds instead of failing with ErrTimeout.
func TestResentRequestWaitsAfresh(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := testsrv.NewScripted(t)
	c := dialScripted(t, srv, Options{Connect: srv.EP, Timeout: 7 * time.Second, Clock: clk,
		ReconnectMin: 100 * time.Millisecond, ReconnectMax: 100 * time.Millisecond})
	k := key("http://afresh.test/")
	got := make(chan error, 1)
	go func() {
		_, err := c.Submit(context.Background(), []wire.SubmitItem{{Key: k}})
		got <- err
	}()
	sub := testsrv.Expect[*wire.Submit](t, srv.Next())
	armed := time.After(wait)
	for d := time.Duration(0); d != 7*time.Second; {
		select {
		case d = <-clk.Created():
		case <-armed:
			t.Fatal("the call never armed its 7 s timer on the fake clock")
		}
	}
	// passes lets d of the fake clock pass, the session kept alive.
	passes := func(d time.Duration) {
		const step = 250 * time.Millisecond
		for e := time.Duration(0); e < d; e += step {
			srv.Send(&wire.Heartbeat{})
			clk.Advance(step)
			select {
			case err := <-got:
				t.Fatalf("the call ended %v into a wait: %v; want it waiting", e, err)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	passes(5 * time.Second)
	srv.Send(&wire.Disconnect{Code: wire.CodeUnavailable, Reason: "restarting"})
	greeted := make(chan struct{})
	greetOnce := sync.OnceFunc(func() { close(greeted) })
	t.Cleanup(greetOnce) // the goroutine below ends even if Greet fails the test
	go func() {          // the reconnect back-off runs on the fake clock too
		for {
			select {
			case <-greeted:
				return
			case <-time.After(5 * time.Millisecond):
				clk.Advance(10 * time.Millisecond)
			}
		}
	}()
	srv.Greet()
	greetOnce()
	again := testsrv.Expect[*wire.Submit](t, srv.Next())
	if again.Req != sub.Req {
		t.Fatalf("resent under request id %d, want the first send's %d", again.Req, sub.Req)
	}
	passes(5 * time.Second) // 10 s since the first send: past its Timeout
	srv.Send(&wire.Submitted{Req: again.Req, Items: []wire.SubmittedItem{{Status: wire.SubmitAccepted, JobID: 1, Fingerprint: k.Fingerprint()}}})
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("submit answered 5 s after its resend: %v, want success", err)
		}
	case <-time.After(wait):
		t.Fatal("the submit did not return after its answer")
	}
}
