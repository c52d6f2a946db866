// Package zsock is the one place drover creates ZeroMQ sockets (pebbe/zmq4
// on the system libzmq). Each constructor creates a socket, applies the
// options DRV/2 relies on (docs/PROTOCOL.md, "Sockets"), applies the
// Security settings, and binds or connects it.
//
// A ZeroMQ socket is not safe for concurrent use: whoever creates one owns
// it and uses it from one goroutine only (it may hand it over to another
// goroutine once, before that goroutine starts using it).
package zsock

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"drover/net/wire"

	"github.com/pebbe/zmq4"
)

// Default endpoints: loopback only. Opening to other hosts is explicit.
const (
	DefaultPeers  = "tcp://127.0.0.1:5570" // peers ROUTER: workers and producers
	DefaultAdmin  = "tcp://127.0.0.1:5571" // admin ROUTER: consoles and CLI
	DefaultEvents = "tcp://127.0.0.1:5572" // events PUB
	// Ephemeral binds to a free port on 127.0.0.1 (tests); read the port
	// back with Endpoint.
	Ephemeral = "tcp://127.0.0.1:*"
)

// Defaults applied unless an Option says otherwise.
const (
	// DefaultHWM is the send and receive high-water mark of ROUTER and
	// DEALER sockets, in messages per peer. DRV/2 batches records into
	// messages, so 1000 messages hold up to 10M records.
	DefaultHWM = 1000
	// DefaultEventsHWM is the send high-water mark of the events PUB, per
	// subscriber; past it a slow subscriber loses events (and sees a gap
	// in their sequence numbers).
	DefaultEventsHWM = 10000
	// DefaultLinger is how long unsent messages are kept when a socket is
	// closed.
	DefaultLinger = time.Second
	// DefaultMaxMsgSize is the largest frame libzmq accepts from a peer
	// before it drops the connection: twice DRV/2's largest message, so a
	// slightly oversized message still reaches the decoder (and is answered
	// with ERROR 413) while a huge one is cut off before it is buffered.
	DefaultMaxMsgSize = 2 * wire.MaxMessage
	// DefaultReconnect and DefaultReconnectMax are the client reconnect
	// backoff: 1 s doubling to 32 s, done by libzmq itself.
	DefaultReconnect    = time.Second
	DefaultReconnectMax = 32 * time.Second
)

// Option changes how a socket is configured.
type Option func(*config)

type config struct {
	sndHWM, rcvHWM int
	linger         time.Duration
	maxMsgSize     int64
	reconnect      time.Duration
	reconnectMax   time.Duration
	security       Security
	beforeConnect  func(*zmq4.Socket) error
}

// WithHWM sets the send and receive high-water marks, in messages.
func WithHWM(send, recv int) Option {
	return func(c *config) { c.sndHWM, c.rcvHWM = send, recv }
}

// WithLinger sets how long unsent messages survive Close (0 drops them).
func WithLinger(d time.Duration) Option { return func(c *config) { c.linger = d } }

// WithMaxMsgSize sets the largest inbound frame (-1: no limit); a peer that
// sends a larger one is disconnected by libzmq.
func WithMaxMsgSize(n int64) Option { return func(c *config) { c.maxMsgSize = n } }

// WithReconnect sets a client socket's reconnect backoff: initial, doubling
// up to max.
func WithReconnect(initial, max time.Duration) Option {
	return func(c *config) { c.reconnect, c.reconnectMax = initial, max }
}

// WithSecurity applies CURVE settings (see Security).
func WithSecurity(s Security) Option { return func(c *config) { c.security = s } }

// WithBeforeConnect runs f on a client socket once it is configured and
// before it connects (MonitorHandshakes needs that: events of a connection
// made before the monitor would be lost).
func WithBeforeConnect(f func(*zmq4.Socket) error) Option {
	return func(c *config) { c.beforeConnect = f }
}

func newConfig(hwm int, opts []Option) config {
	c := config{
		sndHWM: hwm, rcvHWM: hwm, linger: DefaultLinger, maxMsgSize: DefaultMaxMsgSize,
		reconnect: DefaultReconnect, reconnectMax: DefaultReconnectMax,
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// setup runs the option setters in order and stops at the first error.
func setup(what string, steps ...func() error) error {
	for _, s := range steps {
		if err := s(); err != nil {
			return fmt.Errorf("zsock: %s: %w", what, err)
		}
	}
	return nil
}

func (c config) common(s *zmq4.Socket) []func() error {
	return []func() error{
		func() error { return s.SetSndhwm(c.sndHWM) },
		func() error { return s.SetRcvhwm(c.rcvHWM) },
		func() error { return s.SetLinger(c.linger) },
		func() error { return s.SetMaxmsgsize(c.maxMsgSize) },
		func() error { return s.SetTcpKeepalive(1) },
	}
}

func (c config) client(s *zmq4.Socket) []func() error {
	return append(c.common(s),
		func() error { return s.SetReconnectIvl(c.reconnect) },
		func() error { return s.SetReconnectIvlMax(c.reconnectMax) },
		func() error { return c.security.applyClient(s) },
	)
}

// connect runs the before-connect hook, then connects.
func (c config) connect(s *zmq4.Socket, endpoint string) error {
	if c.beforeConnect != nil {
		if err := c.beforeConnect(s); err != nil {
			return err
		}
	}
	return s.Connect(endpoint)
}

func (c config) server(s *zmq4.Socket) []func() error {
	return append(c.common(s), func() error { return c.security.applyServer(s) })
}

// build creates a socket of type t, configures it, and binds or connects
// it; on any error the socket is closed.
func build(t zmq4.Type, what, endpoint string, configure func(*zmq4.Socket) []func() error, attach func(*zmq4.Socket) error) (*zmq4.Socket, error) {
	s, err := zmq4.NewSocket(t)
	if err != nil {
		return nil, fmt.Errorf("zsock: new %s socket: %w", t, err)
	}
	if err := setup(what+" "+endpoint, configure(s)...); err != nil {
		s.Close()
		return nil, err
	}
	if err := attach(s); err != nil {
		s.Close()
		return nil, fmt.Errorf("zsock: %s %q: %w", what, endpoint, err)
	}
	return s, nil
}

// Router creates a ROUTER bound to bind, for the peers or admin socket:
// ROUTER_MANDATORY on (a message to a peer that is gone fails with
// EHOSTUNREACH, and one to a peer whose queue is full fails with EAGAIN
// when sent with DONTWAIT, instead of being dropped silently: see
// Unroutable and WouldBlock), ROUTER_HANDOVER on (a reconnecting peer that
// reuses its routing id takes it over), DefaultHWM, DefaultLinger,
// DefaultMaxMsgSize, TCP keepalive.
func Router(bind string, opts ...Option) (*zmq4.Socket, error) {
	c := newConfig(DefaultHWM, opts)
	return build(zmq4.ROUTER, "router bind", bind,
		func(s *zmq4.Socket) []func() error {
			return append(c.server(s),
				func() error { return s.SetRouterMandatory(1) },
				func() error { return s.SetRouterHandover(true) },
			)
		},
		func(s *zmq4.Socket) error { return s.Bind(bind) })
}

// Dealer creates a DEALER connected to connect, for workers, producers and
// consoles. identity is the routing id ("" lets the ROUTER pick one per
// connection, which is what DRV/2 clients normally do; otherwise 1..255
// bytes not starting with a zero byte). IMMEDIATE is on (nothing is queued
// for a connection that is not up, so nothing stale is sent after a
// reconnect), reconnect backoff DefaultReconnect..DefaultReconnectMax,
// DefaultHWM, DefaultLinger, DefaultMaxMsgSize, TCP keepalive.
func Dealer(connect, identity string, opts ...Option) (*zmq4.Socket, error) {
	if len(identity) > 255 || (identity != "" && identity[0] == 0) {
		return nil, fmt.Errorf("zsock: dealer identity %q: want 1..255 bytes not starting with a zero byte, or empty", identity)
	}
	c := newConfig(DefaultHWM, opts)
	return build(zmq4.DEALER, "dealer connect", connect,
		func(s *zmq4.Socket) []func() error {
			steps := append(c.client(s), func() error { return s.SetImmediate(true) })
			if identity != "" {
				steps = append(steps, func() error { return s.SetIdentity(identity) })
			}
			return steps
		},
		func(s *zmq4.Socket) error { return c.connect(s, connect) })
}

// Pub creates the events PUB bound to bind: DefaultEventsHWM per
// subscriber, linger 0 (events are best effort), DefaultMaxMsgSize.
func Pub(bind string, opts ...Option) (*zmq4.Socket, error) {
	c := newConfig(DefaultEventsHWM, append([]Option{WithLinger(0)}, opts...))
	return build(zmq4.XPUB, "pub bind", bind, c.server,
		func(s *zmq4.Socket) error { return s.Bind(bind) })
}

// Sub creates a SUB connected to connect and subscribed to each topic
// prefix (none: every event), e.g. "job." or "worker.".
func Sub(connect string, topics []string, opts ...Option) (*zmq4.Socket, error) {
	c := newConfig(DefaultEventsHWM, append([]Option{WithLinger(0)}, opts...))
	if len(topics) == 0 {
		topics = []string{""}
	}
	return build(zmq4.SUB, "sub connect", connect,
		func(s *zmq4.Socket) []func() error {
			steps := c.client(s)
			for _, t := range topics {
				steps = append(steps, func() error { return s.SetSubscribe(t) })
			}
			return steps
		},
		func(s *zmq4.Socket) error { return c.connect(s, connect) })
}

// Endpoint returns the endpoint s was last bound or connected to, with the
// real port when it was bound to a wildcard port (LAST_ENDPOINT).
func Endpoint(s *zmq4.Socket) (string, error) {
	ep, err := s.GetLastEndpoint()
	if err != nil {
		return "", fmt.Errorf("zsock: last endpoint: %w", err)
	}
	return ep, nil
}

// Loopback creates a socket with newSocket (Router or Pub) bound to
// Ephemeral and returns it with its real endpoint: for tests, which bind
// 127.0.0.1 on a free port and nothing else.
func Loopback(newSocket func(bind string, opts ...Option) (*zmq4.Socket, error), opts ...Option) (*zmq4.Socket, string, error) {
	s, err := newSocket(Ephemeral, opts...)
	if err != nil {
		return nil, "", err
	}
	ep, err := Endpoint(s)
	if err != nil {
		s.Close()
		return nil, "", err
	}
	return s, ep, nil
}

func errno(err error) zmq4.Errno {
	var ze zmq4.Errno
	if errors.As(err, &ze) {
		return ze
	}
	var se syscall.Errno
	if errors.As(err, &se) {
		return zmq4.Errno(se)
	}
	return 0
}

// Unroutable reports whether a send on a ROUTER failed because no peer has
// that routing id (any more): the session is gone.
func Unroutable(err error) bool { return err != nil && errno(err) == zmq4.EHOSTUNREACH }

// WouldBlock reports whether a DONTWAIT send failed because the peer's
// queue is at its high-water mark: the peer is slow; retry later or drop
// and count.
func WouldBlock(err error) bool { return err != nil && errno(err) == zmq4.Errno(syscall.EAGAIN) }
