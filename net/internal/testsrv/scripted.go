package testsrv

import (
	"testing"
	"time"

	"github.com/pebbe/zmq4"

	"drover/net/wire"
	"drover/net/zsock"
)

// scriptWait bounds each wait of a Scripted server.
const scriptWait = 10 * time.Second

// Scripted is a bare ROUTER on 127.0.0.1 playing the coordinator, for
// tests that need exact control of what a client library is sent. Use it
// from one goroutine (the test's).
type Scripted struct {
	tb    testing.TB
	sock  *zmq4.Socket
	EP    string       // its endpoint
	ident []byte       // routing id of the last message received
	early wire.Message // received by Arrives, for Next

	// Heartbeat is the heartbeat Greet's WELCOME gives (1 s unless set):
	// a test that moves a fake clock past several seconds while the
	// server is silent sets it longer, so that the client's liveness is
	// not what the test meets.
	Heartbeat time.Duration
}

// NewScripted binds a scripted server for the test.
func NewScripted(tb testing.TB) *Scripted {
	tb.Helper()
	sk, ep, err := zsock.Loopback(zsock.Router)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sk.Close() })
	return &Scripted{tb: tb, sock: sk, EP: ep}
}

// Next returns the next message other than HEARTBEAT, and remembers its
// sender for Send; it fails the test after 10 s without one.
func (s *Scripted) Next() wire.Message {
	s.tb.Helper()
	if m := s.early; m != nil {
		s.early = nil
		return m
	}
	p := zmq4.NewPoller()
	p.Add(s.sock, zmq4.POLLIN)
	for {
		polled, err := p.Poll(scriptWait)
		if err != nil || len(polled) == 0 {
			s.tb.Fatalf("scripted server: nothing received within %v (%v)", scriptWait, err)
		}
		ident, m := s.recv()
		s.ident = ident
		if _, hb := m.(*wire.Heartbeat); hb {
			continue
		}
		return m
	}
}

// recv reads the message waiting on the socket and returns its sender and
// the message decoded, failing the test when it cannot.
func (s *Scripted) recv() (ident []byte, m wire.Message) {
	s.tb.Helper()
	frames, err := s.sock.RecvMessageBytes(0)
	if err != nil {
		s.tb.Fatal(err)
	}
	m, err = wire.Decode(frames[1:])
	if err != nil {
		s.tb.Fatalf("scripted server: client sent an undecodable message: %v", err)
	}
	return frames[0], m
}

// Arrives reports whether a message other than HEARTBEAT arrives within
// d, and leaves it to be read by Next. For a check that the client sent
// nothing more: it can miss a message sent late, never see one unsent.
func (s *Scripted) Arrives(d time.Duration) bool {
	s.tb.Helper()
	p := zmq4.NewPoller()
	p.Add(s.sock, zmq4.POLLIN)
	for deadline := time.Now().Add(d); ; {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		polled, err := p.Poll(left)
		if err != nil {
			s.tb.Fatal(err)
		}
		if len(polled) == 0 {
			return false
		}
		ident, m := s.recv()
		if _, hb := m.(*wire.Heartbeat); !hb {
			s.ident, s.early = ident, m
			return true
		}
	}
}

// Send sends m to the sender of the last message received.
func (s *Scripted) Send(m wire.Message) {
	s.tb.Helper()
	frames, err := wire.Encode(m)
	if err != nil {
		s.tb.Fatal(err)
	}
	if _, err := s.sock.SendMessage(s.ident, frames); err != nil {
		s.tb.Fatal(err)
	}
}

// Greet expects a HELLO, answers WELCOME (heartbeat 1 s or Heartbeat,
// liveness 3, listing cancel) and returns the HELLO.
func (s *Scripted) Greet(cancel ...wire.Run) *wire.Hello {
	s.tb.Helper()
	m := s.Next()
	h, ok := m.(*wire.Hello)
	if !ok {
		s.tb.Fatalf("scripted server: got %s, want HELLO", m.Command())
	}
	beat := s.Heartbeat
	if beat == 0 {
		beat = time.Second
	}
	s.Send(&wire.Welcome{Req: h.Req, Session: 1, Heartbeat: beat, Liveness: 3, Slots: h.Slots,
		Limits: wire.ProtocolLimits, Cancel: cancel})
	return h
}

// Expect fails the test unless m is a T, and returns it.
func Expect[T wire.Message](tb testing.TB, m wire.Message) T {
	tb.Helper()
	v, ok := m.(T)
	if !ok {
		tb.Fatalf("got %s %+v, want %T", m.Command(), m, *new(T))
	}
	return v
}
