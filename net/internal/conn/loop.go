package conn

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"drover/backoff"
	"drover/clock"
	"drover/net/wire"
	"drover/net/zsock"
)

// ErrNotUp is returned by Link.Send when no session is live.
var ErrNotUp = errors.New("no live session")

// state is where a connection is in its session's life.
type state uint8

const (
	down     state = iota // no socket: waiting out the backoff
	greeting              // HELLO queued or sent, waiting for WELCOME
	up                    // WELCOME received: the session is live
)

// Link is the loop goroutine's view of the connection, handed to the
// Handler and to posted functions. Use it on the loop goroutine only, or
// in a function Conn.RunIfIdle runs (the loop is blocked meanwhile).
type Link struct {
	c     *Conn
	sock  socket        // the session's transport; nil while down
	ready chan struct{} // the socket may have changed state
	timer clock.Timer   // the loop's wait
	// dirty: the socket may have a message waiting without a signal to
	// come (it signalled, a receive stopped at its bound, or a send may
	// have taken a signal): look before waiting.
	dirty bool

	state    state
	closed   bool // the loop has stopped: nothing can be sent any more
	stopping bool
	stopErr  error
	drop     error // end the session at the end of this iteration

	enc     wire.Encoder
	pending [][][]byte // encoded messages waiting for the socket to accept them
	req     uint64     // last request id handed out
	hello   uint64     // request id of the current HELLO
	welcome *wire.Welcome

	beat, deadAfter    time.Duration
	now                time.Time
	lastRecv, lastSend time.Time
	greetBy, retryAt   time.Time
	backoff            reconnectBackoff
}

// Up reports whether a session is live (WELCOME received, not ended).
func (l *Link) Up() bool { return l.state == up }

// Closed reports whether the loop has stopped for good: posted functions
// that run then must fail what they were asked to do.
func (l *Link) Closed() bool { return l.closed }

// Welcome is the live session's WELCOME (nil when no session is live).
func (l *Link) Welcome() *wire.Welcome { return l.welcome }

// Now is the time of the current loop iteration.
func (l *Link) Now() time.Time { return l.now }

// NextReq returns a fresh request id (ids start at 1 and never repeat on
// one connection, across sessions).
func (l *Link) NextReq() uint64 {
	l.req++
	return l.req
}

// Endpoint is the server endpoint.
func (l *Link) Endpoint() string { return l.c.cfg.Endpoint }

// Conn is the connection, for goroutines the handler starts that must
// Post back to the loop.
func (l *Link) Conn() *Conn { return l.c }

// Stop ends the loop after the current iteration: a live session is told
// DISCONNECT 200, and Conn.Close and Done report err.
func (l *Link) Stop(err error) {
	if !l.stopping {
		l.stopping = true
		l.stopErr = err
	}
}

// Drop ends the live session at the end of this iteration, telling the
// server DISCONNECT with code; the loop reconnects after the backoff.
func (l *Link) Drop(code wire.Code, err error) {
	if l.state == down || l.drop != nil {
		return
	}
	if l.state == up {
		l.Send(&wire.Disconnect{Code: code, Reason: wire.Clip(err.Error(), wire.MaxText)})
	}
	l.drop = err
}

// Send encodes m and hands it to the socket without blocking; a message
// the socket cannot take now (its queue is full) waits in order for it.
// It fails with ErrNotUp when no session is live (HELLO aside), and with
// the encoder's error for a message DRV/2 does not allow.
func (l *Link) Send(m wire.Message) error {
	if l.sock == nil || (l.state != up && m.Command() != wire.CmdHello) {
		return fmt.Errorf("send %s: %w", m.Command(), ErrNotUp)
	}
	frames, err := l.enc.Encode(m)
	if err != nil {
		return err
	}
	l.lastSend = l.now
	l.dirty = true // a send may take the signal of a message that came meanwhile
	if len(l.pending) == 0 {
		err := l.sock.send(m, frames)
		if err == nil {
			return nil
		}
		if !zsock.WouldBlock(err) {
			return fmt.Errorf("send %s: %w", m.Command(), err)
		}
	}
	owned := make([][]byte, len(frames))
	for i, f := range frames {
		owned[i] = append([]byte(nil), f...)
	}
	l.pending = append(l.pending, owned)
	return nil
}

// flushPending sends queued messages until the socket pushes back.
func (l *Link) flushPending() {
	l.dirty = true
	n := 0
	for _, frames := range l.pending {
		if err := l.sock.send(nil, frames); err != nil {
			if !zsock.WouldBlock(err) {
				l.c.cfg.Log.Warn("send failed", "endpoint", l.c.cfg.Endpoint, "err", err)
				n++ // drop it: the session is broken and will be detected
				continue
			}
			break
		}
		n++
	}
	clear(l.pending[:n])
	l.pending = l.pending[n:]
	if len(l.pending) == 0 {
		l.pending = nil
	}
}

// loop is the connection's goroutine.
func (c *Conn) loop() {
	l := &c.link
	l.timer = c.cfg.Clock.NewTimer(time.Hour)
	l.timer.Stop()
	c.run.Lock()
	defer c.run.Unlock()
	defer c.stop()
	for !l.stopping {
		l.now = c.cfg.Clock.Now()
		switch {
		case l.sock == nil && l.now.Before(l.retryAt):
			l.block(l.retryAt.Sub(l.now))
		case l.sock == nil:
			l.connect()
		default:
			l.poll()
		}
		l.now = c.cfg.Clock.Now()
		for _, f := range c.takePosts(false) {
			f(l)
		}
		l.timers()
		if l.drop != nil && l.sock != nil {
			l.end(l.drop, c.cfg.Linger) // let the DISCONNECT leave
		}
		l.drop = nil
		c.h.Flush(l)
	}
}

// block waits up to d for a post, a signal from the socket, or the timer;
// not at all when posts are waiting. It parks the goroutine on Go's
// scheduler (see zsock.Watch), never in a cgo call, and lets go of the
// Link meanwhile (Conn.run: RunIfIdle may use it).
func (l *Link) block(d time.Duration) {
	if !l.c.sleep() || d <= 0 {
		l.c.wake()
		return
	}
	l.timer.Reset(d)
	l.c.run.Unlock()
	select {
	case <-l.c.bell:
	case <-l.ready:
		l.dirty = true
	case <-l.timer.C():
	}
	l.c.run.Lock()
	l.timer.Stop()
	l.c.wake()
}

// poll works the socket (receiving what it has, sending what waits for it)
// and, when it has nothing more to do, waits for a post, its next signal
// or the next timer.
func (l *Link) poll() {
	if err := l.sock.refused(); err != nil {
		l.notAuthorized(err)
		return
	}
	if l.dirty {
		read, write, err := l.sock.ready()
		if err != nil {
			l.fatal(err)
			return
		}
		l.dirty = read || (write && len(l.pending) > 0)
	}
	if !l.dirty {
		l.block(l.nextTimer())
		l.now = l.c.cfg.Clock.Now()
		if err := l.sock.refused(); err != nil {
			l.notAuthorized(err)
			return
		}
	}
	if l.dirty {
		l.work()
	}
}

// notAuthorized stops the loop: the server refused this client (its key,
// or its role), and retrying would only hang.
func (l *Link) notAuthorized(err error) {
	if !errors.Is(err, zsock.ErrNotAuthorized) {
		err = fmt.Errorf("%w: %w", zsock.ErrNotAuthorized, err)
	}
	l.c.cfg.Log.Error("the server refused this client: stopping", "endpoint", l.c.cfg.Endpoint, "err", err)
	l.lose(err)
	l.Stop(err)
}

// work receives what the socket has and sends what waits for it.
func (l *Link) work() {
	l.receive()
	if l.sock != nil && len(l.pending) > 0 {
		l.flushPending()
	}
}

// fatal stops the loop on a socket error (the ZeroMQ context is gone).
func (l *Link) fatal(err error) {
	l.c.cfg.Log.Error("socket failed: stopping the connection", "endpoint", l.c.cfg.Endpoint, "err", err)
	l.Stop(fmt.Errorf("conn: %w", err))
}

// nextTimer is how long until the next timer of the current state.
func (l *Link) nextTimer() time.Duration {
	switch l.state {
	case greeting:
		return l.greetBy.Sub(l.now)
	case up:
		return min(l.lastSend.Add(l.beat).Sub(l.now), l.lastRecv.Add(l.deadAfter).Sub(l.now))
	}
	return time.Second
}

// receive handles what the socket has, a bounded number at a time.
func (l *Link) receive() {
	for range 1024 {
		if l.sock == nil {
			return
		}
		frames, m, err := l.sock.recv()
		if errors.Is(err, errEmpty) {
			// Nothing more now, and the socket will signal the next
			// message (until something is sent: see Send).
			l.dirty = false
			return
		}
		if err != nil {
			l.lose(err)
			return
		}
		l.lastRecv = l.now
		if m == nil {
			if m, err = wire.Decode(frames); err != nil {
				l.c.cfg.Log.Warn("undecodable message from the server", "endpoint", l.c.cfg.Endpoint, "err", err)
				continue
			}
		}
		l.handle(m)
	}
}

func (l *Link) handle(m wire.Message) {
	c := l.c
	switch m := m.(type) {
	case *wire.Heartbeat:
	case *wire.Welcome:
		if l.state != greeting || m.Req != l.hello {
			c.cfg.Log.Warn("unexpected WELCOME ignored", "endpoint", c.cfg.Endpoint, "req", m.Req)
			return
		}
		l.state = up
		l.welcome = m
		l.beat = m.Heartbeat
		l.deadAfter = m.Heartbeat * time.Duration(m.Liveness)
		l.backoff.reset()
		c.cfg.Log.Info("session up", "endpoint", c.cfg.Endpoint, "session", m.Session,
			"heartbeat", m.Heartbeat, "liveness", m.Liveness, "server", m.Server)
		c.h.Up(l, m)
	case *wire.Disconnect:
		if m.Code == wire.CodeForbidden {
			l.notAuthorized(&DisconnectError{Code: m.Code, Reason: m.Reason})
			return
		}
		l.lose(&DisconnectError{Code: m.Code, Reason: m.Reason})
	case *wire.Error:
		switch {
		case l.state == greeting && m.Req == l.hello && m.Code == wire.CodeForbidden:
			l.notAuthorized(fmt.Errorf("HELLO refused: %w", m))
		case l.state == greeting && m.Req == l.hello:
			l.lose(fmt.Errorf("HELLO refused: %w", m))
		case m.Code == wire.CodeHelloRequired:
			l.lose(fmt.Errorf("the server has no session for this connection: %w", m))
		case l.state == up:
			c.h.Receive(l, m)
		default:
			c.cfg.Log.Warn("ERROR before WELCOME", "endpoint", c.cfg.Endpoint, "err", m)
		}
	default:
		if l.state != up {
			c.cfg.Log.Warn("message before WELCOME ignored", "endpoint", c.cfg.Endpoint, "command", m.Command())
			return
		}
		c.h.Receive(l, m)
	}
}

// timers applies the greeting timeout, the server's liveness and our
// heartbeats.
func (l *Link) timers() {
	switch l.state {
	case greeting:
		if !l.now.Before(l.greetBy) {
			l.lose(fmt.Errorf("%w within %v", ErrNoWelcome, l.c.cfg.GreetTimeout))
		}
	case up:
		if l.now.Sub(l.lastRecv) >= l.deadAfter {
			l.lose(fmt.Errorf("%w for %v (heartbeat %v × liveness %d)", ErrSilent,
				l.now.Sub(l.lastRecv).Round(time.Millisecond), l.beat, l.welcome.Liveness))
			return
		}
		if l.now.Sub(l.lastSend) >= l.beat {
			if err := l.Send(&wire.Heartbeat{}); err != nil {
				l.c.cfg.Log.Warn("heartbeat not sent", "endpoint", l.c.cfg.Endpoint, "err", err)
			}
		}
	}
}

// connect starts a session attempt: a new socket (a DEALER, or a pipe to
// a server in this process) and a HELLO.
func (l *Link) connect() {
	c := l.c
	sk, err := c.dial(l.ready)
	if err != nil {
		l.retryAt = l.now.Add(l.backoff.next())
		c.cfg.Log.Warn("connect failed", "endpoint", c.cfg.Endpoint, "err", err)
		c.h.Down(l, err, false)
		return
	}
	l.sock = sk
	l.dirty = true
	l.state = greeting
	l.greetBy = l.now.Add(c.cfg.GreetTimeout)
	l.lastRecv, l.lastSend = l.now, l.now
	l.hello = l.NextReq()
	if err := l.Send(c.h.Hello(l.hello)); err != nil {
		l.closeSocket(0)
		l.state = down
		l.Stop(fmt.Errorf("conn: HELLO: %w", err))
	}
}

// lose ends the session (or the attempt) and schedules a reconnection.
func (l *Link) lose(err error) { l.end(err, 0) }

// end closes the socket, keeping what it still has to send for up to
// linger, and schedules a reconnection.
func (l *Link) end(err error, linger time.Duration) {
	c := l.c
	welcomed := l.state == up
	l.closeSocket(linger)
	l.state = down
	l.welcome = nil
	wait := l.backoff.next()
	var de *DisconnectError
	if errors.As(err, &de) && de.Code == wire.CodeEvicted {
		wait = c.cfg.ReconnectMax
	}
	l.retryAt = l.now.Add(wait)
	c.cfg.Log.Info("session down", "endpoint", c.cfg.Endpoint, "welcomed", welcomed, "err", err, "retry_in", wait.Round(time.Millisecond))
	c.h.Down(l, err, welcomed)
}

func (l *Link) closeSocket(linger time.Duration) {
	if l.sock == nil {
		return
	}
	l.sock.close(linger)
	l.sock = nil
	l.pending = nil
}

// stop ends the loop: DISCONNECT 200 to a live session, sockets closed,
// functions still queued run with a closed Link.
func (c *Conn) stop() {
	l := &c.link
	l.now = c.cfg.Clock.Now()
	if l.state == up {
		if err := l.Send(&wire.Disconnect{Code: wire.CodeOK, Reason: "client closing"}); err != nil {
			c.cfg.Log.Debug("DISCONNECT not sent", "endpoint", c.cfg.Endpoint, "err", err)
		}
		if l.sock != nil && len(l.pending) > 0 {
			l.flushPending()
		}
	}
	l.closeSocket(c.cfg.Linger)
	l.state = down
	l.welcome = nil
	l.closed = true
	for _, f := range c.takePosts(true) {
		f(l)
	}
	c.err = l.stopErr
}

// reconnectBackoff is the reconnection wait: min, doubling to max, ±10 %
// jitter.
type reconnectBackoff struct {
	p backoff.Policy
	n int // reconnections since the last WELCOME
}

func (b *reconnectBackoff) next() time.Duration {
	b.n++
	return b.p.Delay(b.n, rand.Float64)
}

func (b *reconnectBackoff) reset() { b.n = 0 }
