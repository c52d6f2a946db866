package zsock

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"drover/net/wire"

	"github.com/pebbe/zmq4"
)

// wait bounds every wait in these tests; they finish far sooner.
const wait = 5 * time.Second

func closeLater(t testing.TB, s *zmq4.Socket) {
	t.Helper()
	t.Cleanup(func() { s.Close() })
}

func loopbackRouter(t testing.TB, opts ...Option) (*zmq4.Socket, string) {
	t.Helper()
	s, ep, err := Loopback(Router, opts...)
	if err != nil {
		t.Fatal(err)
	}
	closeLater(t, s)
	if !strings.HasPrefix(ep, "tcp://127.0.0.1:") || strings.HasSuffix(ep, ":*") {
		t.Fatalf("endpoint %q, want tcp://127.0.0.1:<port>", ep)
	}
	return s, ep
}

func dealer(t testing.TB, ep, identity string, opts ...Option) *zmq4.Socket {
	t.Helper()
	s, err := Dealer(ep, identity, opts...)
	if err != nil {
		t.Fatal(err)
	}
	closeLater(t, s)
	return s
}

// recv waits (with a deadline, polling) for one message on s.
func recv(t testing.TB, s *zmq4.Socket) [][]byte {
	t.Helper()
	msg, ok := recvWithin(t, s, wait)
	if !ok {
		t.Fatalf("nothing received within %v", wait)
	}
	return msg
}

func recvWithin(t testing.TB, s *zmq4.Socket, d time.Duration) ([][]byte, bool) {
	t.Helper()
	p := zmq4.NewPoller()
	p.Add(s, zmq4.POLLIN)
	polled, err := p.Poll(d)
	if err != nil {
		t.Fatalf("poll: %v", err)
	}
	if len(polled) == 0 {
		return nil, false
	}
	msg, err := s.RecvMessageBytes(zmq4.DONTWAIT)
	if err != nil {
		t.Fatalf("recv: %v", err)
	}
	return msg, true
}

func send(t testing.TB, s *zmq4.Socket, parts ...any) {
	t.Helper()
	if _, err := s.SendMessage(parts...); err != nil {
		t.Fatalf("send: %v", err)
	}
}

func encode(t testing.TB, m wire.Message) [][]byte {
	t.Helper()
	f, err := wire.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// A DRV/1 exchange over real sockets: the ROUTER sees the DEALER's routing
// id first, then exactly the frames the DEALER sent.
func TestRouterDealerExchange(t *testing.T) {
	router, ep := loopbackRouter(t)
	d := dealer(t, ep, "worker-1")

	hello := &wire.Hello{Req: 1, Role: wire.RoleWorker, ID: "w", Slots: 2}
	send(t, d, encode(t, hello))
	got := recv(t, router)
	if string(got[0]) != "worker-1" {
		t.Fatalf("routing id %q, want worker-1", got[0])
	}
	m, err := wire.Decode(got[1:])
	if err != nil {
		t.Fatal(err)
	}
	if h, ok := m.(*wire.Hello); !ok || h.ID != "w" || h.Slots != 2 {
		t.Fatalf("decoded %#v", m)
	}
	welcome := &wire.Welcome{Req: 1, Session: 1, Heartbeat: time.Second, Liveness: 3, Limits: wire.ProtocolLimits}
	send(t, router, got[0], encode(t, welcome))
	back, err := wire.Decode(recv(t, d))
	if err != nil {
		t.Fatal(err)
	}
	if w, ok := back.(*wire.Welcome); !ok || w.Session != 1 {
		t.Fatalf("decoded %#v", back)
	}
}

// Without an identity the ROUTER makes one up per connection.
func TestDealerWithoutIdentity(t *testing.T) {
	router, ep := loopbackRouter(t)
	a, b := dealer(t, ep, ""), dealer(t, ep, "")
	send(t, a, "a")
	send(t, b, "b")
	ids := map[string]string{}
	for range 2 {
		m := recv(t, router)
		ids[string(m[1])] = string(m[0])
	}
	if len(ids["a"]) == 0 || len(ids["b"]) == 0 || ids["a"] == ids["b"] {
		t.Fatalf("routing ids %q, want two distinct non-empty ones", ids)
	}
}

// ROUTER_MANDATORY: a message for a peer that is not there is an error, not
// a silent drop.
func TestRouterMandatory(t *testing.T) {
	router, _ := loopbackRouter(t)
	_, err := router.SendMessageDontwait("nobody", "DRV2", "HEARTBEAT", make([]byte, 8))
	if !Unroutable(err) {
		t.Fatalf("send to unknown peer: %v, want EHOSTUNREACH", err)
	}
	if WouldBlock(err) || Unroutable(nil) || WouldBlock(nil) {
		t.Fatal("error classification is wrong")
	}
}

// A peer that does not read fills its queue; DONTWAIT sends then fail with
// EAGAIN, so the server can count them instead of blocking.
func TestRouterSlowPeerWouldBlock(t *testing.T) {
	router, ep := loopbackRouter(t, WithHWM(2, 2))
	d := dealer(t, ep, "slow", WithHWM(2, 2))
	send(t, d, "hi")
	recv(t, router) // the connection is up
	big := make([]byte, 256<<10)
	for i := 0; ; i++ {
		if i == 10000 {
			t.Fatal("10000 sends to a peer that never reads all succeeded")
		}
		_, err := router.SendMessageDontwait("slow", big)
		if err == nil {
			continue
		}
		if !WouldBlock(err) {
			t.Fatalf("send %d: %v, want EAGAIN", i, err)
		}
		break
	}
}

var monitorSeq atomic.Int64

// monitor returns a PAIR socket receiving s's events.
func monitor(t testing.TB, s *zmq4.Socket, events zmq4.Event) *zmq4.Socket {
	t.Helper()
	addr := fmt.Sprintf("inproc://zsock-monitor-%d", monitorSeq.Add(1))
	if err := s.Monitor(addr, events); err != nil {
		t.Fatal(err)
	}
	m, err := zmq4.NewSocket(zmq4.PAIR)
	if err != nil {
		t.Fatal(err)
	}
	closeLater(t, m)
	// Runs before m's close (LIFO): an event sent to a closed reader
	// would block libzmq's I/O thread (see Handshakes.Close).
	t.Cleanup(func() { s.Monitor("", 0) })
	if err := m.Connect(addr); err != nil {
		t.Fatal(err)
	}
	return m
}

// waitEvent waits for one of the events in want and returns it.
func waitEvent(t testing.TB, m *zmq4.Socket, want zmq4.Event) zmq4.Event {
	t.Helper()
	deadline := time.Now().Add(wait)
	p := zmq4.NewPoller()
	p.Add(m, zmq4.POLLIN)
	for time.Now().Before(deadline) {
		polled, err := p.Poll(time.Until(deadline))
		if err != nil {
			t.Fatal(err)
		}
		if len(polled) == 0 {
			break
		}
		ev, _, _, err := m.RecvEvent(zmq4.DONTWAIT)
		if err != nil {
			t.Fatal(err)
		}
		if ev&want != 0 {
			return ev
		}
	}
	t.Fatalf("no %v within %v", want, wait)
	return 0
}

// MAXMSGSIZE: libzmq drops the connection of a peer sending a frame over
// the limit, before buffering it.
func TestMaxMsgSizeDisconnects(t *testing.T) {
	router, ep := loopbackRouter(t, WithMaxMsgSize(1024))
	mon := monitor(t, router, zmq4.EVENT_ACCEPTED|zmq4.EVENT_DISCONNECTED)
	d := dealer(t, ep, "big")
	waitEvent(t, mon, zmq4.EVENT_ACCEPTED)
	send(t, d, make([]byte, 2048))
	waitEvent(t, mon, zmq4.EVENT_DISCONNECTED)
	if m, ok := recvWithin(t, router, 0); ok {
		t.Fatalf("the oversized message was delivered: %d frames", len(m))
	}
}

func TestPubSubTopics(t *testing.T) {
	pub, ep, err := Loopback(Pub)
	if err != nil {
		t.Fatal(err)
	}
	closeLater(t, pub)
	sub, err := Sub(ep, []string{"job."})
	if err != nil {
		t.Fatal(err)
	}
	closeLater(t, sub)
	done, err := wire.EncodeEvent(eventOf("job.done", 2))
	if err != nil {
		t.Fatal(err)
	}
	lost, err := wire.EncodeEvent(eventOf("worker.lost", 1))
	if err != nil {
		t.Fatal(err)
	}
	// A subscription reaches the PUB asynchronously: publish until the
	// subscriber sees a job event, and check it never sees a worker one.
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		send(t, pub, lost)
		send(t, pub, done)
		msg, ok := recvWithin(t, sub, 20*time.Millisecond)
		if !ok {
			continue
		}
		ev, err := wire.DecodeEvent(msg)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind != "job.done" || ev.JobID != 2 {
			t.Fatalf("got %+v, want only job events", ev)
		}
		return
	}
	t.Fatalf("no event within %v", wait)
}

func TestCurve(t *testing.T) {
	if !zmq4.HasCurve() {
		t.Skip("libzmq without CURVE")
	}
	srvPublic, srvSecret, err := NewKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	otherPublic, _, err := NewKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	router, ep := loopbackRouter(t, WithSecurity(Security{Secret: srvSecret}))
	mon := monitor(t, router, zmq4.EVENT_HANDSHAKE_SUCCEEDED|zmq4.EVENT_HANDSHAKE_FAILED_AUTH|
		zmq4.EVENT_HANDSHAKE_FAILED_PROTOCOL|zmq4.EVENT_HANDSHAKE_FAILED_NO_DETAIL)
	failed := zmq4.EVENT_HANDSHAKE_FAILED_AUTH | zmq4.EVENT_HANDSHAKE_FAILED_PROTOCOL | zmq4.EVENT_HANDSHAKE_FAILED_NO_DETAIL

	// The right server key: encrypted traffic flows.
	good := dealer(t, ep, "good", WithSecurity(Security{ServerPublic: srvPublic}))
	if ev := waitEvent(t, mon, zmq4.EVENT_HANDSHAKE_SUCCEEDED|failed); ev != zmq4.EVENT_HANDSHAKE_SUCCEEDED {
		t.Fatalf("handshake with the right key: %v", ev)
	}
	send(t, good, "secret")
	if m := recv(t, router); string(m[1]) != "secret" {
		t.Fatalf("got %q", m)
	}

	// A wrong server key and a plain-text client never get through.
	wrong := dealer(t, ep, "wrong", WithSecurity(Security{ServerPublic: otherPublic}))
	if ev := waitEvent(t, mon, zmq4.EVENT_HANDSHAKE_SUCCEEDED|failed); ev&failed == 0 {
		t.Fatalf("handshake with a wrong key: %v, want a failure", ev)
	}
	plain := dealer(t, ep, "plain")
	if ev := waitEvent(t, mon, zmq4.EVENT_HANDSHAKE_SUCCEEDED|failed); ev&failed == 0 {
		t.Fatalf("handshake without CURVE: %v, want a failure", ev)
	}
	_ = wrong
	_ = plain
}

func TestOptionsApplied(t *testing.T) {
	_, ep := loopbackRouter(t)
	type check struct {
		name string
		get  func(*zmq4.Socket) (any, error)
		want any
	}
	sndhwm := func(s *zmq4.Socket) (any, error) { return s.GetSndhwm() }
	rcvhwm := func(s *zmq4.Socket) (any, error) { return s.GetRcvhwm() }
	linger := func(s *zmq4.Socket) (any, error) { return s.GetLinger() }
	maxmsg := func(s *zmq4.Socket) (any, error) { return s.GetMaxmsgsize() }
	tests := []struct {
		name   string
		make   func() (*zmq4.Socket, error)
		checks []check
	}{
		{"router defaults", func() (*zmq4.Socket, error) { return Router(Ephemeral) }, []check{
			{"sndhwm", sndhwm, DefaultHWM}, {"rcvhwm", rcvhwm, DefaultHWM}, {"linger", linger, DefaultLinger},
			{"maxmsgsize", maxmsg, int64(DefaultMaxMsgSize)},
			{"keepalive", func(s *zmq4.Socket) (any, error) { return s.GetTcpKeepalive() }, 1},
		}},
		{"router options", func() (*zmq4.Socket, error) {
			return Router(Ephemeral, WithHWM(5, 6), WithLinger(0), WithMaxMsgSize(-1))
		}, []check{
			{"sndhwm", sndhwm, 5}, {"rcvhwm", rcvhwm, 6}, {"linger", linger, time.Duration(0)}, {"maxmsgsize", maxmsg, int64(-1)},
		}},
		{"dealer defaults", func() (*zmq4.Socket, error) { return Dealer(ep, "id-1") }, []check{
			{"immediate", func(s *zmq4.Socket) (any, error) { return s.GetImmediate() }, true},
			{"reconnect", func(s *zmq4.Socket) (any, error) { return s.GetReconnectIvl() }, DefaultReconnect},
			{"reconnect max", func(s *zmq4.Socket) (any, error) { return s.GetReconnectIvlMax() }, DefaultReconnectMax},
			{"identity", func(s *zmq4.Socket) (any, error) { return s.GetIdentity() }, "id-1"},
			{"sndhwm", sndhwm, DefaultHWM},
		}},
		{"dealer reconnect", func() (*zmq4.Socket, error) {
			return Dealer(ep, "", WithReconnect(100*time.Millisecond, 2*time.Second))
		}, []check{
			{"reconnect", func(s *zmq4.Socket) (any, error) { return s.GetReconnectIvl() }, 100 * time.Millisecond},
			{"reconnect max", func(s *zmq4.Socket) (any, error) { return s.GetReconnectIvlMax() }, 2 * time.Second},
		}},
		{"pub defaults", func() (*zmq4.Socket, error) { return Pub(Ephemeral) }, []check{
			{"sndhwm", sndhwm, DefaultEventsHWM}, {"linger", linger, time.Duration(0)},
		}},
		{"sub defaults", func() (*zmq4.Socket, error) { return Sub(ep, nil) }, []check{
			{"rcvhwm", rcvhwm, DefaultEventsHWM},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := tt.make()
			if err != nil {
				t.Fatal(err)
			}
			closeLater(t, s)
			for _, c := range tt.checks {
				got, err := c.get(s)
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				if got != c.want {
					t.Errorf("%s = %v, want %v", c.name, got, c.want)
				}
			}
		})
	}
}

func TestConstructorErrors(t *testing.T) {
	_, taken := loopbackRouter(t)
	pub, _, err := NewKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		make func() (*zmq4.Socket, error)
		want string
	}{
		{"port in use", func() (*zmq4.Socket, error) { return Router(taken) }, taken},
		{"bad endpoint", func() (*zmq4.Socket, error) { return Router("tcp://127.0.0.1:notaport") }, "notaport"},
		{"unknown transport", func() (*zmq4.Socket, error) { return Pub("bogus://x") }, "bogus://x"},
		{"zero-byte identity", func() (*zmq4.Socket, error) { return Dealer(taken, "\x00id") }, "zero byte"},
		{"long identity", func() (*zmq4.Socket, error) { return Dealer(taken, strings.Repeat("i", 256)) }, "255"},
		{"short key", func() (*zmq4.Socket, error) {
			return Dealer(taken, "", WithSecurity(Security{ServerPublic: "abc"}))
		}, "want 40"},
		{"non-Z85 key", func() (*zmq4.Socket, error) {
			return Router(Ephemeral, WithSecurity(Security{Secret: strings.Repeat("~", 40)}))
		}, "want Z85"},
		{"server with only a public key", func() (*zmq4.Socket, error) {
			return Router(Ephemeral, WithSecurity(Security{Public: pub}))
		}, "needs Secret"},
		{"client keys without the server's", func() (*zmq4.Socket, error) {
			return Sub(taken, nil, WithSecurity(Security{Public: pub}))
		}, "needs ServerPublic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := tt.make()
			if err == nil {
				s.Close()
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "zsock: ") {
				t.Fatalf("error %q, want one starting with zsock: and naming %q", err, tt.want)
			}
		})
	}
}
