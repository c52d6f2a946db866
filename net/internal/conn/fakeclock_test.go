package conn

import (
	"errors"
	"testing"
	"time"

	"github.com/pebbe/zmq4"

	"drover/clock"
	"drover/net/wire"
)

// tryNext returns the next message the scripted server has within d, or
// nil.
func (s *scripted) tryNext(d time.Duration) wire.Message {
	s.t.Helper()
	p := zmq4.NewPoller()
	p.Add(s.sock, zmq4.POLLIN)
	if polled, err := p.Poll(d); err != nil || len(polled) == 0 {
		return nil
	}
	frames, err := s.sock.RecvMessageBytes(0)
	if err != nil {
		s.t.Fatal(err)
	}
	m, err := wire.Decode(frames[1:])
	if err != nil {
		s.t.Fatalf("scripted server: client sent an undecodable message: %v", err)
	}
	return m
}

// TestLivenessOnTheFakeClock: the loop's heartbeats and its silence
// detection run on Config.Clock. With a 1 s heartbeat and liveness 3, the
// fake clock is moved in 100 ms steps: the client heartbeats, and declares
// the silent server lost once 3 s of the fake clock have passed, not
// before and not much after, in however little real time.
func TestLivenessOnTheFakeClock(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := newScripted(t)
	r := newRecorder()
	start(t, Config{Endpoint: srv.ep, Clock: clk, ReconnectMin: time.Hour, ReconnectMax: time.Hour}, r)
	ident, m := srv.next()
	h, ok := m.(*wire.Hello)
	if !ok {
		t.Fatalf("first message %s, want HELLO", m.Command())
	}
	srv.send(ident, welcome(h.Req, time.Second))
	recv(t, r.ups, "WELCOME")
	const step = 100 * time.Millisecond
	beats := 0
	for elapsed := time.Duration(0); ; {
		if elapsed > time.Minute {
			t.Fatalf("no session end after %v of the fake clock; want one after 3 s", elapsed)
		}
		for m := srv.tryNext(5 * time.Millisecond); m != nil; m = srv.tryNext(5 * time.Millisecond) {
			if _, hb := m.(*wire.Heartbeat); !hb {
				t.Fatalf("got %s while the session is up, want HEARTBEATs", m.Command())
			}
			beats++
		}
		select {
		case err := <-r.downs:
			if !errors.Is(err, ErrSilent) {
				t.Fatalf("session ended with %v, want ErrSilent", err)
			}
			if elapsed < 3*time.Second || elapsed > 4*time.Second {
				t.Fatalf("session declared lost after %v of the fake clock, want heartbeat × liveness = 3 s (a step or two later at most)", elapsed)
			}
			if beats < 2 {
				t.Fatalf("%d HEARTBEATs in %v of silence, want one per second", beats, elapsed)
			}
			return
		default:
		}
		clk.Advance(step)
		elapsed += step
	}
}
