package conn

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pebbe/zmq4"

	"drover/backoff"
	"drover/net/internal/testsrv"
	"drover/net/wire"
	"drover/net/zsock"
)

// wait bounds every wait in these tests; they finish far sooner.
const wait = 10 * time.Second

// recorder is a Handler that reports what happens to its session on
// channels the test reads.
type recorder struct {
	role   wire.Role
	ups    chan *wire.Welcome
	downs  chan error
	got    chan wire.Message
	hellos chan uint64
}

func newRecorder() *recorder {
	return &recorder{
		role:   wire.RoleProducer,
		ups:    make(chan *wire.Welcome, 16),
		downs:  make(chan error, 16),
		got:    make(chan wire.Message, 16),
		hellos: make(chan uint64, 16),
	}
}

func (r *recorder) Hello(req uint64) *wire.Hello {
	r.hellos <- req
	return &wire.Hello{Req: req, Role: r.role, ID: "conn-test", Host: "test"}
}
func (r *recorder) Up(_ *Link, w *wire.Welcome)     { r.ups <- w }
func (r *recorder) Receive(_ *Link, m wire.Message) { r.got <- m }
func (r *recorder) Flush(*Link)                     {}
func (r *recorder) Down(_ *Link, err error, _ bool) { r.downs <- err }
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatalf("no %s within %v", what, wait)
		panic("unreachable")
	}
}

// startServer runs a drover server on loopback (100ms heartbeat) until
// stop is called or the test ends. peers "" binds an ephemeral port.
func startServer(t *testing.T, peers string) (s *testsrv.Server, stop func()) {
	t.Helper()
	s = testsrv.Start(t, testsrv.Options{Peers: peers})
	return s, func() {
		if err := s.Stop(); err != nil {
			t.Errorf("server run: %v", err)
		}
	}
}

func start(t *testing.T, cfg Config, h Handler) *Conn {
	t.Helper()
	c, err := Start(cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestSessionUpAndClose(t *testing.T) {
	s, _ := startServer(t, "")
	r := newRecorder()
	c := start(t, Config{Endpoint: s.PeersEndpoint()}, r)
	w := recv(t, r.ups, "WELCOME")
	if w.Heartbeat != testsrv.DefaultHeartbeat || w.Liveness != 3 {
		t.Fatalf("welcome %+v: want the server's %v heartbeat and liveness 3", w, testsrv.DefaultHeartbeat)
	}
	// A request through Post reaches the server and its reply comes back
	// to Receive.
	ran := make(chan error, 1)
	c.Post(func(l *Link) {
		ran <- l.Send(&wire.Request{Req: l.NextReq(), Keys: nil})
	})
	if err := recv(t, ran, "posted function"); err == nil {
		t.Fatal("sending a REQUEST with no keys succeeded, want the encoder's error")
	}
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v, want nil", err)
	}
	if c.Post(func(*Link) {}) {
		t.Fatal("Post after Close reported true, want false")
	}
}

// TestReconnectAfterServerRestart stops the server (it says DISCONNECT
// 503) and starts a fresh one on the same port: the connection comes back
// by itself with a new session.
func TestReconnectAfterServerRestart(t *testing.T) {
	s, stop := startServer(t, "")
	ep := s.PeersEndpoint()
	r := newRecorder()
	start(t, Config{Endpoint: ep, ReconnectMin: 20 * time.Millisecond, ReconnectMax: 100 * time.Millisecond}, r)
	recv(t, r.ups, "first WELCOME")
	stop()
	// The server says DISCONNECT 503 as it stops; a DEALER with IMMEDIATE
	// set (zsock's) may lose it when the server closes the connection
	// right after (see TestShutdownDisconnectDelivered), and then the
	// silence ends the session.
	err := recv(t, r.downs, "session end")
	var de *DisconnectError
	if !(errors.As(err, &de) && de.Code == wire.CodeUnavailable) && !errors.Is(err, ErrSilent) {
		t.Fatalf("session ended with %v, want DISCONNECT 503 or silence", err)
	}
	startServer(t, ep)
	recv(t, r.ups, "WELCOME from the new server")
}

// scripted is a bare ROUTER playing the server, for behaviour a real
// server does not show on demand (silence).
type scripted struct {
	t    *testing.T
	sock *zmq4.Socket
	ep   string
}

func newScripted(t *testing.T) *scripted {
	t.Helper()
	sk, ep, err := zsock.Loopback(zsock.Router)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sk.Close() })
	return &scripted{t: t, sock: sk, ep: ep}
}

// next returns the routing id and message of the next message.
func (s *scripted) next() ([]byte, wire.Message) {
	s.t.Helper()
	p := zmq4.NewPoller()
	p.Add(s.sock, zmq4.POLLIN)
	polled, err := p.Poll(wait)
	if err != nil || len(polled) == 0 {
		s.t.Fatalf("scripted server: nothing received within %v (%v)", wait, err)
	}
	frames, err := s.sock.RecvMessageBytes(0)
	if err != nil {
		s.t.Fatal(err)
	}
	m, err := wire.Decode(frames[1:])
	if err != nil {
		s.t.Fatalf("scripted server: client sent an undecodable message: %v", err)
	}
	return frames[0], m
}

func (s *scripted) send(ident []byte, m wire.Message) {
	s.t.Helper()
	frames, err := wire.Encode(m)
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.sock.SendMessage(ident, frames); err != nil {
		s.t.Fatal(err)
	}
}

func welcome(req uint64, beat time.Duration) *wire.Welcome {
	return &wire.Welcome{Req: req, Session: 1, Heartbeat: beat, Liveness: 3, Limits: wire.ProtocolLimits}
}

// TestSilentServerIsLost: a server that says WELCOME and then nothing is
// declared lost after heartbeat × liveness, and the client comes back on a
// new DEALER (a new routing id) with a new HELLO. That it heartbeats
// meanwhile, one per interval, is TestLivenessOnTheFakeClock's: here, on
// the wall clock with a 20 ms heartbeat, a loop woken late on a loaded
// machine may find the silence over before a beat was due.
func TestSilentServerIsLost(t *testing.T) {
	srv := newScripted(t)
	r := newRecorder()
	start(t, Config{Endpoint: srv.ep, ReconnectMin: 10 * time.Millisecond, ReconnectMax: 20 * time.Millisecond}, r)
	ident, m := srv.next()
	h, ok := m.(*wire.Hello)
	if !ok {
		t.Fatalf("first message %s, want HELLO", m.Command())
	}
	srv.send(ident, welcome(h.Req, 20*time.Millisecond))
	recv(t, r.ups, "WELCOME")
	for {
		id2, m := srv.next()
		if _, hb := m.(*wire.Heartbeat); hb {
			continue
		}
		h2, ok := m.(*wire.Hello)
		if !ok {
			t.Fatalf("got %s, want HEARTBEATs then a new HELLO", m.Command())
		}
		if string(id2) == string(ident) {
			t.Fatal("the new HELLO came on the old routing id, want a new DEALER")
		}
		if h2.Req <= h.Req {
			t.Fatalf("new HELLO request id %d, want above %d", h2.Req, h.Req)
		}
		break
	}
	if err := recv(t, r.downs, "session end"); !errors.Is(err, ErrSilent) {
		t.Fatalf("session ended with %v, want ErrSilent", err)
	}
}

// TestHelloRefusedBacksOff: an ERROR answering HELLO fails the attempt and
// the next attempt comes after the backoff, with a new HELLO.
func TestHelloRefusedBacksOff(t *testing.T) {
	srv := newScripted(t)
	r := newRecorder()
	start(t, Config{Endpoint: srv.ep, ReconnectMin: 10 * time.Millisecond, ReconnectMax: 20 * time.Millisecond}, r)
	ident, m := srv.next()
	srv.send(ident, &wire.Error{Req: m.RequestID(), Code: wire.CodeConflict, Msg: "go away"})
	err := recv(t, r.downs, "failed attempt")
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeConflict || !strings.Contains(err.Error(), "HELLO refused") {
		t.Fatalf("attempt failed with %v, want HELLO refused with ERROR 409", err)
	}
	_, m = srv.next()
	if _, ok := m.(*wire.Hello); !ok {
		t.Fatalf("got %s after the refusal, want a new HELLO", m.Command())
	}
}

// TestStopFromHandler: a handler that stops the loop makes Close report
// its error, and posts queued after that run on a closed link.
func TestStopFromHandler(t *testing.T) {
	srv := newScripted(t)
	r := newRecorder()
	c := start(t, Config{Endpoint: srv.ep}, r)
	srv.next()
	want := errors.New("enough")
	c.Post(func(l *Link) { l.Stop(want) })
	<-c.Done()
	if err := c.Close(); !errors.Is(err, want) {
		t.Fatalf("close: %v, want %v", err, want)
	}
}

func TestPostRunsInOrderOnLoop(t *testing.T) {
	srv := newScripted(t)
	c := start(t, Config{Endpoint: srv.ep}, newRecorder())
	const n = 1000
	var got []int // touched only on the loop goroutine
	done := make(chan []int, 1)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				v := g*n + i
				c.Post(func(*Link) { got = append(got, v) })
			}
		}()
	}
	wg.Wait()
	c.Post(func(*Link) { done <- got })
	all := recv(t, done, "posted functions")
	if len(all) != 4*n {
		t.Fatalf("%d posted functions ran, want %d", len(all), 4*n)
	}
	last := map[int]int{0: -1, 1: -1, 2: -1, 3: -1}
	for _, v := range all {
		g, i := v/n, v%n
		if i <= last[g] {
			t.Fatalf("goroutine %d: post %d ran after %d, want posting order", g, i, last[g])
		}
		last[g] = i
	}
}

func TestConfigErrors(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no endpoint", Config{}, "empty endpoint"},
		{"min above max", Config{Endpoint: "tcp://127.0.0.1:1", ReconnectMin: time.Second, ReconnectMax: time.Millisecond}, "reconnect backoff"},
		{"negative greet", Config{Endpoint: "tcp://127.0.0.1:1", GreetTimeout: -1}, "greet timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Start(tc.cfg, newRecorder())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Start: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	b := reconnectBackoff{p: backoff.Policy{Start: time.Second, Cap: 8 * time.Second, Jitter: 0.1}}
	want := []time.Duration{1, 2, 4, 8, 8}
	for i, w := range want {
		got := b.next()
		lo, hi := w*time.Second*9/10, min(w*time.Second*11/10, 8*time.Second)
		if got < lo || got > hi {
			t.Fatalf("wait %d: %v, want %v ±10%%", i+1, got, w*time.Second)
		}
	}
	b.reset()
	if got := b.next(); got > 1100*time.Millisecond {
		t.Fatalf("after reset: %v, want about 1s", got)
	}
}
