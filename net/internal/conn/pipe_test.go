package conn

import (
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"drover/net/internal/pipe"
	"drover/net/wire"
)

// A connection to an inproc endpoint that a server in this process listens
// on goes over a pipe, not ZeroMQ: the test plays the server on the pipe
// hub itself. A server that stops ends the session (the client sees the
// pipe close) instead of leaving it to the heartbeat.
func TestInprocGoesOverPipe(t *testing.T) {
	name := "inproc://conn-test-pipe"
	sig := make(chan struct{}, 1)
	hub, err := pipe.Listen(name, sig)
	if err != nil {
		t.Fatal(err)
	}
	r := newRecorder()
	start(t, Config{Endpoint: name, ReconnectMin: time.Hour}, r)

	recv(t, sig, "HELLO over the pipe")
	msgs, _ := hub.Take(nil, 10)
	if len(msgs) != 1 || !pipe.IsClient(msgs[0].Ident) || msgs[0].Value != nil {
		t.Fatalf("hub got %+v, want one message in frames from a pipe client", msgs)
	}
	ident := msgs[0].Ident
	m, err := wire.Decode(msgs[0].Frames[1:])
	if err != nil {
		t.Fatal(err)
	}
	hello, ok := m.(*wire.Hello)
	if !ok {
		t.Fatalf("first message %s, want HELLO", m.Command())
	}
	if err := hub.SendValue(ident, welcome(hello.Req, time.Minute)); err != nil {
		t.Fatal(err)
	}
	hub.Flush() // as a server does before it waits
	recv(t, r.ups, "WELCOME")

	hub.Close()
	if err := recv(t, r.downs, "the session's end"); !errors.Is(err, pipe.ErrClosed) {
		t.Fatalf("session ended with %v, want the pipe closed", err)
	}
}

// A real server's inproc peers endpoint serves a connection over the pipe
// end to end.
func TestInprocPeersOfARealServer(t *testing.T) {
	s, _ := startServer(t, "")
	r := newRecorder()
	c := start(t, Config{Endpoint: s.InprocPeers()}, r)
	recv(t, r.ups, "WELCOME")
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}

// Connections leave nothing behind: after 40 connections over TCP and over
// a pipe are opened, used and closed, the goroutines (each DEALER's watch
// among them) are back to what they were.
func TestClosedConnectionsLeaveNoGoroutines(t *testing.T) {
	s, _ := startServer(t, "")
	var before goleak.Option
	for i := range 41 {
		if i == 1 {
			// After one connection: the server's reactor is up with its
			// own watches.
			before = goleak.IgnoreCurrent()
		}
		ep := s.PeersEndpoint()
		if i%2 == 1 {
			ep = s.InprocPeers()
		}
		r := newRecorder()
		c, err := Start(Config{Endpoint: ep}, r)
		if err != nil {
			t.Fatal(err)
		}
		recv(t, r.ups, "WELCOME")
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	goleak.VerifyNone(t, before) // waits for goroutines still ending
}
