package server

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"drover/clock"
	"drover/coord"
	"drover/coord/id"
	"drover/net/wire"
	"drover/net/zsock"
)

// TestBusyReactorIsNotSilence: a reactor step that takes longer than a
// session's heartbeat × liveness (the fake clock moves 10 s inside it;
// liveness is 3 s) does not end a session whose HEARTBEAT arrived meanwhile
// and waits unread: silence is counted only up to what the reactor has
// read. Before, a loaded coordinator dropped live peers after long steps.
func TestBusyReactorIsNotSilence(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC))
	opts := Options{Clock: clk, Coord: coord.Config{Heartbeat: time.Second}}
	opts.Peers, opts.Admin, opts.Events = zsock.Ephemeral, zsock.Ephemeral, "-"
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	var armed atomic.Bool
	inStep, sent := make(chan struct{}), make(chan struct{})
	hookErr := make(chan string, 1)
	s.hooks.step = func() {
		if !armed.CompareAndSwap(true, false) {
			return
		}
		inStep <- struct{}{}
		<-sent
		// The reactor owns the socket: wait here until the HEARTBEAT is
		// in it, unread, then let the step "take" 10 s.
		if !peerWaiting(s) {
			hookErr <- "the HEARTBEAT never reached the server's socket"
		}
		clk.Advance(10 * time.Second)
	}
	_, stop := runBuilt(t, s)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	})

	p := dial(t, s.PeersEndpoint())
	hello(t, p, wire.RoleProducer, "p", 0)
	// Advance once the reactor waits on its timer (its only one here):
	// before it re-arms after the WELCOME, nothing would fire. Armed only
	// then: an armed hook holds the reactor's step until the test reads.
	waitFor(t, "the reactor waiting after WELCOME", func() bool { return clk.Pending() == 1 })
	armed.Store(true)
	clk.Advance(time.Second) // past the reactor's longest wait: a step
	select {
	case <-inStep:
	case <-time.After(time.Minute):
		t.Fatal("no reactor step within a minute")
	}
	p.send(&wire.Heartbeat{})
	close(sent)

	k := id.Key{Crawler: "c", Processor: "p", URL: "http://busy.test/"}
	p.send(&wire.Request{Req: 2, Keys: []id.Key{k}})
	if m := p.recv(); !isVerdicts(m) {
		select {
		case e := <-hookErr:
			t.Fatal(e)
		default:
		}
		t.Fatalf("after a 10 s step with its HEARTBEAT waiting: %#v, want VERDICTS (the session alive)", m)
	}
}

func isVerdicts(m wire.Message) bool { _, ok := m.(*wire.Verdicts); return ok }

// TestHeartbeatsWithinLongStep: a step that takes in message after
// message sends the heartbeats that fall due meanwhile, between them, not
// only at its end (the fake clock moves 2 s after the first of two
// REQUESTs read in one step; the heartbeat is 1 s). Before, a client whose
// coordinator got a few per cent of a core heard nothing for longer than
// heartbeat × liveness during long steps and took it for lost.
func TestHeartbeatsWithinLongStep(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC))
	opts := Options{Clock: clk, Coord: coord.Config{Heartbeat: time.Second}}
	opts.Peers, opts.Admin, opts.Events = zsock.Ephemeral, zsock.Ephemeral, "-"
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	var armed atomic.Bool
	hookErr := make(chan string, 1)
	s.hooks.msg = func() {
		// Only at the first REQUEST (the second message): the hook also
		// runs after the HELLO, possibly after the test saw its WELCOME
		// and armed it, and a clock moved there sent a HEARTBEAT before
		// VERDICTS 2.
		if s.stats.Received != 2 || !armed.CompareAndSwap(true, false) {
			return
		}
		// The reactor owns the socket: wait until the second REQUEST is
		// in it, so that this step reads it too, then let 2 s pass.
		if !peerWaiting(s) {
			hookErr <- "the second REQUEST never reached the server's socket"
		}
		clk.Advance(2 * time.Second)
	}
	_, stop := runBuilt(t, s)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	p := dial(t, s.PeersEndpoint())
	hello(t, p, wire.RoleProducer, "p", 0)
	armed.Store(true)
	for i := range 2 {
		k := id.Key{Crawler: "c", Processor: "p", URL: fmt.Sprintf("http://long-step.test/%d", i)}
		p.send(&wire.Request{Req: uint64(2 + i), Keys: []id.Key{k}})
	}
	var got []string
	for len(got) == 0 || got[len(got)-1] != "VERDICTS 3" {
		m, err := wire.Decode(p.recvFrames()) // recv passes HEARTBEATs over
		if err != nil {
			t.Fatal(err)
		}
		switch m := m.(type) {
		case *wire.Heartbeat:
			got = append(got, "HEARTBEAT")
		case *wire.Verdicts:
			got = append(got, fmt.Sprintf("VERDICTS %d", m.Req))
		default:
			t.Fatalf("got %#v, want VERDICTS or HEARTBEAT", m)
		}
	}
	select {
	case e := <-hookErr:
		t.Fatal(e)
	default:
	}
	i := slices.Index(got, "VERDICTS 2")
	if i < 0 || !slices.Contains(got[i:], "HEARTBEAT") {
		t.Fatalf("received %v: want a HEARTBEAT between VERDICTS 2 and VERDICTS 3 (the step's 2 s between them)", got)
	}
}

// peerWaiting reports whether a message waits, unread, on s's peers
// socket within a minute; called on the reactor's goroutine (a hook), which
// owns the socket.
func peerWaiting(s *Server) bool {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) { // polls the socket; bounded by the deadline
		ready, _, err := zsock.Ready(s.peers.sock)
		if err != nil {
			return false
		}
		if ready {
			return true
		}
	}
	return false
}
