// Package conn is the client side of a DRV/2 session, shared by drover's
// worker, producer and admin libraries: one goroutine owns a DEALER
// (created by net/zsock; or, to a server in this process, a pipe from
// net/internal/pipe), says HELLO, waits for WELCOME, heartbeats, watches
// the server's liveness, and reconnects with a fresh socket after a backoff
// (1 s doubling to 32 s by default, reset after each WELCOME) whenever the
// session ends. What the session is for lives in a Handler, whose methods
// all run on that goroutine, so handler state needs no locks.
//
// The loop never blocks in libzmq: it waits on channels, for the DEALER's
// signals (zsock.Watch), for Post, which queues a function to run on the
// loop goroutine and rings a doorbell channel, and for its next timer.
// Every ZeroMQ socket here is used by exactly one goroutine.
package conn

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/pebbe/zmq4"

	"drover/backoff"
	"drover/clock"
	"drover/net/wire"
	"drover/net/zsock"
)

// Defaults of Config.
const (
	DefaultReconnectMin = time.Second      // first wait after a session ends
	DefaultReconnectMax = 32 * time.Second // longest wait; also the wait after eviction
	DefaultGreetTimeout = 5 * time.Second  // no WELCOME within it: the attempt failed
	DefaultLinger       = time.Second      // how long a final DISCONNECT may take to leave
)

// ErrClosed is returned for work posted to a connection whose loop has
// stopped.
var ErrClosed = errors.New("connection closed")

// ErrSilent says the server sent nothing for heartbeat × liveness.
var ErrSilent = errors.New("server silent")

// ErrNoWelcome says a HELLO got no WELCOME within the greeting timeout.
var ErrNoWelcome = errors.New("no WELCOME")

// DisconnectError is how a session ends when the server sends DISCONNECT.
type DisconnectError struct {
	Code   wire.Code
	Reason string
}

// Error renders the code and the server's reason.
func (e *DisconnectError) Error() string {
	return fmt.Sprintf("server disconnected the session: %d %s: %s", uint16(e.Code), e.Code, e.Reason)
}

// Handler is what a session is for. Every method runs on the loop
// goroutine, one at a time.
type Handler interface {
	// Hello returns the HELLO for a new session, with request id req.
	Hello(req uint64) *wire.Hello
	// Up says a session started: w is the server's WELCOME.
	Up(l *Link, w *wire.Welcome)
	// Receive handles a message of the live session other than HEARTBEAT,
	// WELCOME and DISCONNECT; ERROR 401 ends the session instead.
	Receive(l *Link, m wire.Message)
	// Flush runs at the end of every loop iteration, after the posted
	// functions and received messages of that iteration: the place to
	// send what they produced as one batch.
	Flush(l *Link)
	// Down says a session ended (welcomed true) or an attempt to start one
	// failed (welcomed false), and why. The loop then waits and reconnects,
	// unless the handler calls l.Stop.
	Down(l *Link, err error, welcomed bool)
}

// Config configures a connection. Zero durations take the defaults.
type Config struct {
	// Endpoint is the server socket to connect to: tcp://host:port, or an
	// inproc:// endpoint of a server in this process.
	Endpoint string
	// ReconnectMin and ReconnectMax bound the wait before a reconnection:
	// ReconnectMin after a session ends, doubling after each failed
	// attempt up to ReconnectMax, ±10 % jitter. After an eviction
	// (DISCONNECT 410) the wait is ReconnectMax.
	ReconnectMin, ReconnectMax time.Duration
	// GreetTimeout is how long an attempt waits for WELCOME.
	GreetTimeout time.Duration
	// Linger bounds how long the final DISCONNECT may take to leave.
	Linger time.Duration
	// Log receives connection events (default: discard).
	Log *slog.Logger
	// Security is the CURVE keys of a tcp:// or ipc:// connection (zero:
	// none). Whatever it holds, the connection watches its handshakes: one
	// the server refuses (or that fails for a mismatch of keys) stops the
	// loop with an error wrapping zsock.ErrNotAuthorized, as do ERROR 403
	// answering HELLO and DISCONNECT 403.
	Security zsock.Security
	// Clock gives the loop its time: heartbeats, liveness, the greeting
	// timeout and reconnection waits (default: the system clock; tests
	// pass a clock.Fake).
	Clock clock.Clock
}

// Clock returns the clock the connection runs on: its handler's timers
// take their time from it too.
func (c *Conn) Clock() clock.Clock { return c.cfg.Clock }

func (c *Config) setDefaults() error {
	if c.Endpoint == "" {
		return errors.New("conn: empty endpoint: want tcp://host:port or inproc://name")
	}
	if c.ReconnectMin == 0 {
		c.ReconnectMin = DefaultReconnectMin
	}
	if c.ReconnectMax == 0 {
		c.ReconnectMax = max(DefaultReconnectMax, c.ReconnectMin)
	}
	if c.GreetTimeout == 0 {
		c.GreetTimeout = DefaultGreetTimeout
	}
	if c.Linger == 0 {
		c.Linger = DefaultLinger
	}
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	switch {
	case c.ReconnectMin < 0 || c.ReconnectMax < c.ReconnectMin:
		return fmt.Errorf("conn: reconnect backoff %v..%v: want 0 < min <= max", c.ReconnectMin, c.ReconnectMax)
	case c.GreetTimeout < 0:
		return fmt.Errorf("conn: greet timeout %v: want > 0", c.GreetTimeout)
	case c.Linger < 0:
		return fmt.Errorf("conn: linger %v: want >= 0", c.Linger)
	}
	return nil
}

// Conn is one client connection: its loop goroutine and doorbell. Create
// with Start; stop with Close, or from the handler with Link.Stop.
type Conn struct {
	cfg  Config
	h    Handler
	link Link

	// run is held by the loop goroutine except while it blocks waiting
	// (Link.block): whoever holds it may use the Link (RunIfIdle).
	run   sync.Mutex
	mu    sync.Mutex
	posts []func(*Link)
	spare []func(*Link)
	rung  bool // the doorbell was rung since the loop last took posts
	// asleep: the loop is (about to be) waiting; only then does a post
	// ring the doorbell.
	asleep bool
	closed bool

	bell chan struct{} // wakes the loop when it sleeps and a post arrives
	done chan struct{} // closed when the loop has stopped
	err  error         // why the loop stopped; read after done
}

// Start starts the connection's loop, which
// connects at once. The handler's methods run on the loop goroutine from
// now on.
func Start(cfg Config, h Handler) (*Conn, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if h == nil {
		return nil, errors.New("conn: nil handler")
	}
	// A client's batches are messages of tens of KB, as the
	// coordinator's are: without this, freeing each one gave its pages
	// back to the kernel and the next faulted them in again.
	zsock.TuneAllocator()
	c := &Conn{
		cfg:  cfg,
		h:    h,
		bell: make(chan struct{}, 1),
		done: make(chan struct{}),
	}
	c.link = Link{c: c, ready: make(chan struct{}, 1), backoff: reconnectBackoff{p: backoff.Policy{Start: cfg.ReconnectMin, Cap: cfg.ReconnectMax, Jitter: 0.1}}}
	go func() {
		c.loop()
		close(c.done)
	}()
	return c, nil
}

// Post queues f to run on the loop goroutine and wakes the loop. It
// reports false, without queueing f, when the loop has stopped. Functions
// posted before the loop stops run, with a Link that is down and closed.
func (c *Conn) Post(f func(*Link)) bool {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	c.posts = append(c.posts, f)
	ring := c.asleep && !c.rung
	if ring {
		c.rung = true
	}
	c.mu.Unlock()
	if ring {
		select {
		case c.bell <- struct{}{}:
		default:
		}
	}
	return true
}

// RunIfIdle runs f and then the handler's Flush on the caller's goroutine,
// as the loop would, when the loop is blocked waiting and its session goes
// over a pipe, and reports whether it did; when it did not, post f. It
// spares the loop a wake-up for what another goroutine brings it (a
// worker's finished job: its RESULT goes out at once, from here). Over
// ZeroMQ it never runs f: a send may take the signal of a message that
// came meanwhile, which the blocked loop would then miss. When f or Flush
// leave the loop something to do (a stop, a dropped session, messages the
// pipe could not take yet), the loop is woken.
func (c *Conn) RunIfIdle(f func(*Link)) bool {
	if !c.run.TryLock() {
		return false
	}
	defer c.run.Unlock()
	l := &c.link
	if l.closed || l.stopping {
		return false
	}
	if _, ok := l.sock.(*pipeSocket); !ok {
		return false
	}
	l.now = c.cfg.Clock.Now()
	f(l)
	c.h.Flush(l)
	if l.stopping || l.drop != nil || len(l.pending) > 0 {
		select {
		case c.bell <- struct{}{}:
		default:
		}
	}
	return true
}

// Close stops the loop (saying DISCONNECT 200 if a session is up) and
// waits for it. It returns why the loop stopped: nil after Close, or the
// error a handler gave Link.Stop.
func (c *Conn) Close() error {
	c.Post(func(l *Link) { l.Stop(nil) })
	<-c.done
	return c.err
}

// Done is closed once the loop has stopped.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the loop stopped; valid after Done is closed.
func (c *Conn) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// Queued reports how many posted functions wait to run on the loop.
func (c *Conn) Queued() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.posts)
}

// Endpoint is the server endpoint this connection dials.
func (c *Conn) Endpoint() string { return c.cfg.Endpoint }

// takePosts returns the queued functions; final marks the connection
// closed so that nothing more is queued.
func (c *Conn) takePosts(final bool) []func(*Link) {
	c.mu.Lock()
	defer c.mu.Unlock()
	got := c.posts
	c.posts = c.spare[:0]
	c.spare = got
	c.rung = false
	if final {
		c.closed = true
	}
	return got
}

// sleep marks the loop asleep unless posts are waiting, and reports
// whether it may block.
func (c *Conn) sleep() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.posts) > 0 {
		return false
	}
	c.asleep = true
	return true
}

// wake marks the loop awake: posts need not ring.
func (c *Conn) wake() {
	c.mu.Lock()
	c.asleep = false
	c.mu.Unlock()
}

// IsInproc reports whether endpoint is an in-process endpoint.
func IsInproc(endpoint string) bool { return strings.HasPrefix(endpoint, "inproc://") }

// newDealer is the DEALER of one session attempt, its handshakes
// monitored (signalling ready).
func (c *Conn) newDealer(ready chan struct{}) (*zmq4.Socket, *zsock.Handshakes, error) {
	var hs *zsock.Handshakes
	d, err := zsock.Dealer(c.cfg.Endpoint, "",
		zsock.WithReconnect(c.cfg.ReconnectMin, c.cfg.ReconnectMax),
		zsock.WithLinger(0),
		zsock.WithSecurity(c.cfg.Security),
		zsock.WithBeforeConnect(func(s *zmq4.Socket) error {
			var err error
			hs, err = zsock.MonitorHandshakes(s, ready)
			return err
		}))
	if err != nil {
		hs.Close()
		return nil, nil, err
	}
	return d, hs, nil
}
